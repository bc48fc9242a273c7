"""The dashboard and the alerts show every gated depth: a pair gating ``[1, 5]`` whose second run
lost four questions at top-5 only. The run page, its JSON twin, the history page and the compare
page read a real SQLite store filled by ``record_run``; the alert is built as the DAG builds it."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi.testclient import TestClient
from store.builders import ranked_run

from retrieval_eval.airflow.alerts import build_message
from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.webui.app import create_app
from retrieval_eval.webui.chart_marks import DASHES, PALETTE
from retrieval_eval.workflows.recording import Recorded, record_run

SVG = "{http://www.w3.org/2000/svg}"

BEFORE = {"a0": 1, "a1": 1, "b0": 2, "b1": 2, "c0": 5, "c1": 5, "c2": 5, "c3": 5, "n0": None}
AFTER = {**BEFORE, "c0": 9, "c1": 9, "c2": 9, "c3": 9}  # top-1 and top-3 as before


@dataclass
class Pages:
    client: TestClient
    first: int
    second: int
    result: RunResult
    recorded: Recorded


@pytest.fixture(scope="module")
def pages(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pages]:
    url = f"sqlite:///{tmp_path_factory.mktemp('depths') / 'results.sqlite'}"
    thresholds = Thresholds()
    first = record_run(ranked_run(BEFORE, [1, 5]), store_url=url, thresholds=thresholds)
    result = ranked_run(AFTER, [1, 5], day=1)
    second = record_run(result, store_url=url, thresholds=thresholds)
    assert second.verdict.state == "regression"
    # another retriever on the set, gating the seed's depths, for the compare page
    record_run(ranked_run(BEFORE, [1, 3], retriever="dense"), store_url=url, thresholds=thresholds)
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        assert first.run_id and second.run_id
        yield Pages(client, first.run_id, second.run_id, result, second)
    app.state.store_source.close()


def _text(html: str, element_id: str) -> str:
    found = re.search(rf'id="{element_id}"[^>]*>([^<]*)<', html)
    assert found is not None, element_id
    return found.group(1)


def test_the_run_page_shows_every_gated_depth(pages: Pages) -> None:
    html = pages.client.get(f"/runs/{pages.second}").text
    assert (_text(html, "top1"), _text(html, "top5")) == ("22.2%", "44.4%")
    assert 'id="top3"' not in html
    assert "-44.4 pts" in html
    assert '<th class="num">Top-5 [95% CI]</th>' in html
    assert '<th class="num">Baseline top-5 [95% CI]</th>' in html
    assert '<li data-kind="top5_to_miss">top-5 hit → miss: <strong>4</strong></li>' in html
    assert 'data-kind="top3_to_miss"' not in html and "top-3 hit → miss" not in html
    assert "<th>Top-1</th><th>Top-5</th>" in html
    row = re.search(r'<tr data-question-id="c0" class="([^"]*)"', html)
    assert row is not None and "miss" in row.group(1) and "flipped-to-miss" in row.group(1)
    # the top-5 flip is listed once among the questions, marked, with its baseline rank
    c0 = html[html.index('<tr data-question-id="c0"') :].split("</tr>")[0]
    assert 'data-flips="top5_to_miss"' in c0 and "top-5 hit → miss</span>" in c0
    assert "(baseline 5)" in c0


def test_the_run_json_carries_the_depths(pages: Pages) -> None:
    data = pages.client.get(f"/api/runs/{pages.second}").json()
    run = data["run"]
    assert run["depths"] == [1, 5] and run["hits_at"] == {"1": 2, "5": 4}
    assert run["delta_at"]["5"] == pytest.approx(-4 / 9) and run["delta_at"]["1"] == 0
    top5 = data["flips"]["to_miss_at"]["5"]
    assert [f["id"] for f in top5] == ["c0", "c1", "c2", "c3"]
    # the deeper depth's flips are read by id with the seed's: their questions in both runs
    assert [(f["first_hit_rank"], f["baseline_first_hit_rank"]) for f in top5] == [(9, 5)] * 4
    assert data["verdict"]["by_depth"]["5"]["dropped"] is True


def test_the_history_page_charts_and_lists_every_depth(pages: Pages) -> None:
    html = pages.client.get("/history", params={"set": "demo.set", "retriever": "bm25"}).text
    assert _text(html, "latest-top5") == "44.4%" and 'id="latest-top3"' not in html
    assert '<th class="num">Top-5 [95% CI]</th>' in html and '<th class="num">Δ top-5</th>' in html
    assert ">top-5<" in html  # the chart's legend names the series
    data = pages.client.get("/api/history", params={"set": "demo.set", "retriever": "bm25"}).json()
    assert data["depths"] == [1, 5]


def test_the_compare_page_adds_the_deeper_depth(pages: Pages) -> None:
    html = pages.client.get("/compare", params={"set": "demo.set", "r": ["bm25", "dense"]}).text
    assert "<th>Top-5 [95% CI]</th>" in html
    cells = re.findall(r'<td data-label="Top-5" class="num top5">([^<]*)', html)
    assert cells == ["44.4% ", "88.9% "]  # dense gated [1, 3]: counted from its questions


def test_the_alert_names_the_depth_that_regressed(pages: Pages) -> None:
    message = build_message("regression", pages.result, pages.recorded, "https://af.example")
    lines = message.text().splitlines()
    assert "Top-1: 22.2% → 22.2%" in lines and "Top-5: 88.9% → 44.4%" in lines
    assert not [line for line in lines if line.startswith("Top-3")]
    assert "Now missed at top-5: c0, c1, c2, c3" in lines
    payload: dict[str, Any] = message.model_dump(mode="json")
    assert payload["depths"] == [1, 5] and payload["after_at"]["5"] == pytest.approx(4 / 9)


def _cells(html: str, retriever: str) -> dict[str, str]:
    """The overview row of ``retriever``: each cell's text by its data-label."""
    row = html[html.index(f'data-retriever="{retriever}"') :].split("</tr>")[0]
    cells = re.findall(r'<td data-label="([^"]*)"[^>]*>(.*?)</td>', row, re.S)
    return {label: re.sub(r"<[^>]+>", "", text).strip() for label, text in cells}


def test_the_overview_shows_every_gated_depth_of_each_pair(pages: Pages) -> None:
    html = pages.client.get("/").text
    heads = re.findall(r'<th class="num">(.*?)</th>', html.split("</thead>")[0])
    heads = [re.sub(r"<[^>]+>", "", head) for head in heads]
    assert heads[:6] == [f"Top-{d} [95% CI]" for d in (1, 3, 5)] + ["Δ top-1", "Δ top-3", "Δ top-5"]
    bm25, dense = _cells(html, "bm25"), _cells(html, "dense")
    assert bm25["Top-5"].startswith("44.4% [") and bm25["Top-1"].startswith("22.2% [")
    assert bm25["Δ top-5"] == "-44.4 pts" and bm25["Δ top-1"] == "+0.0 pts"
    # a depth the pair does not gate is missing, said so, not its ungated figure
    assert bm25["Top-3"] == bm25["Δ top-3"] == "–" and dense["Top-5"] == dense["Δ top-5"] == "–"
    assert 'title="not a gated depth of this run"' in html
    assert dense["Top-3"].startswith("44.4% [")  # 4 of 9 within rank 3


def test_the_overview_json_carries_the_depths(pages: Pages) -> None:
    data = pages.client.get("/api/overview").json()
    latest = {p["retriever"]: p["latest"] for p in data["pairs"]}
    assert latest["bm25"]["depths"] == [1, 5] and latest["bm25"]["hits_at"] == {"1": 2, "5": 4}
    assert latest["bm25"]["delta_at"]["5"] == pytest.approx(-4 / 9)
    assert latest["dense"]["depths"] == [1, 3]


def _spark(html: str, retriever: str) -> ET.Element:
    """The overview row's sparkline of ``retriever``, parsed."""
    row = html[html.index(f'data-retriever="{retriever}"') :].split("</tr>")[0]
    found = re.search(r'<svg class="spark".*?</svg>', row, re.S)
    assert found is not None, retriever
    return ET.fromstring(found.group(0))


def test_the_overview_trend_draws_every_gated_depth(pages: Pages) -> None:
    """Each pair's sparkline has a line per depth its runs gate, named in its accessible label
    and tooltip; a depth has one style on the whole page, the legend's."""
    html = pages.client.get("/").text
    bm25 = _spark(html, "bm25")
    assert bm25.get("role") == "img"
    assert bm25.get("aria-label") == "top-1, top-5 over the last 2 runs"
    title = bm25.findtext(f"{SVG}title") or ""
    assert title.startswith("top-1, top-5 over the last 2 runs: top-1 22%, 22%; top-5 89%, 44% (")
    lines = {line.get("data-line"): line for line in bm25.iter(f"{SVG}polyline")}
    assert list(lines) == ["top-1", "top-5"]
    # the page's trend depths are 1, 3 and 5: top-5 is drawn third's style, top-1 as before
    top5, top1 = lines["top-5"], lines["top-1"]
    assert (top5.get("stroke"), top5.get("stroke-dasharray")) == (PALETTE[2], DASHES[2])
    assert (top1.get("stroke"), top1.get("stroke-dasharray")) == (PALETTE[0], None)
    marks = [c.get("class") for c in bm25.iter(f"{SVG}circle")]
    assert marks.count("spark-regression") == 1  # the second run, on the top-1 line
    dense = _spark(html, "dense")  # one run gating the seed's depths: dots, no lines
    assert dense.get("aria-label") == "top-1, top-3 over the last 1 runs"
    assert "top-1 22%; top-3 44%" in (dense.findtext(f"{SVG}title") or "")
    legend = html[html.index('id="spark-legend"') :].split("</p>")[0]
    key = (
        r'<span class="trend-key"><svg[^>]*><polyline [^>]*stroke="([^"]+)"[^>]*/></svg> (top-\d+)'
    )
    assert re.findall(key, legend) == [
        (PALETTE[0], "top-1"),
        (PALETTE[1], "top-3"),
        (PALETTE[2], "top-5"),
    ]
    assert "the trend of its last runs at each gated depth" in legend and "<th>Trend</th>" in html

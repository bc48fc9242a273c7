"""Every rate the dashboard prints carries its 95 % Wilson interval, and its JSON twin the pair.

The intervals are computed here independently, with :func:`retrieval_eval.evaluation.intervals.wilson` over
the stored runs' hit counts, and looked for next to each rate: the run page's top-1/top-3 cards,
its slice table (by form and hard class, the baseline's columns too) and its baseline line; the
overview's rows; the history page's cards and rows. Each page's rate cells are also counted, so
a rate printed without its interval fails even where this test did not name it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.evaluation.results import SliceRates
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from webui.fill import BM25, SET, Filled

RATE = r"\d{1,3}\.\d%"
WITH_INTERVAL = re.compile(rf'{RATE} <span class="muted ci">\[{RATE}, {RATE}\]</span>')


def _pct(rate: float) -> str:
    return f"{rate * 100:.1f}%"


def _shown(rate: float | None, hits: int, count: int) -> str:
    """How the page shows a rate with its interval (computed here, not by the app)."""
    interval = wilson(hits, count)
    assert rate is not None and interval is not None
    low, high = interval
    return f'{_pct(rate)} <span class="muted ci">[{_pct(low)}, {_pct(high)}]</span>'


def _card(top: int, hits: int, count: int) -> str:
    low, high = wilson(hits, count) or (0.0, 0.0)
    return f'id="top{top}-ci" title="95% Wilson interval">95% CI [{_pct(low)}, {_pct(high)}]<'


def _cells(html: str, css_class: str) -> list[str]:
    return re.findall(rf'<td [^>]*class="num {css_class}">(.*?)</td>', html, re.S)


def _slice_row(html: str, dim: str, value: str) -> str:
    found = re.search(
        rf'<tr data-dimension="{dim}" data-value="{re.escape(value)}">(.*?)</tr>', html, re.S
    )
    assert found, (dim, value)
    return found.group(1)


@pytest.fixture
def app_client(filled_sqlite: Filled) -> Iterator[TestClient]:
    app = create_app(filled_sqlite.url, require_auth=False)
    with TestClient(app) as client:
        yield client
    app.state.store_source.close()


def _check_slices(row_html: str, rates: SliceRates, prefix: str = "") -> None:
    for top, hits, rate in (
        (1, rates.top1_hits, rates.top1_hit_rate),
        (3, rates.top3_hits, rates.top3_hit_rate),
    ):
        cell = re.search(rf'class="num {prefix}top{top}">(.*?)</td>', row_html, re.S)
        assert cell and cell.group(1) == _shown(rate, hits, rates.questions), (prefix, top)


def test_the_run_page_shows_every_rate_with_its_interval(
    app_client: TestClient, filled_sqlite: Filled
) -> None:
    run_id = filled_sqlite.regression_ids[0]
    with open_store(filled_sqlite.url) as store:
        stored = store.get_run(run_id)
        baseline = store.get_run(stored.baseline_run_id or 0)
    html = app_client.get(f"/runs/{run_id}").text
    r, b = stored.result, baseline.result
    n = r.question_count
    assert _card(1, r.top1_hits, n) in html and _card(3, r.top3_hits, n) in html
    slices = [
        ("by_form", r.by_form, b.by_form),
        ("by_hard_class", r.by_hard_class, b.by_hard_class),
    ]
    rows = 0
    for dim, mine, theirs in slices:
        for value, rates in mine.items():
            if rates.questions == 0:  # an empty slice: "–" and no interval
                continue
            row = _slice_row(html, dim, value)
            _check_slices(row, rates)
            if value in theirs and theirs[value].questions:
                _check_slices(row, theirs[value], "baseline-")
            rows += 1
    assert rows >= 4
    # the baseline line names the baseline's rates, each with its interval
    assert f'id="baseline-top1">{_shown(b.top1_hit_rate, b.top1_hits, n)}<' in html
    assert f'id="baseline-top3">{_shown(b.top3_hit_rate, b.top3_hits, n)}<' in html
    # no rate cell of the slice table without its interval
    for css in ("top1", "top3", "baseline-top1", "baseline-top3"):
        for cell in _cells(html, css):
            assert cell == "–" or WITH_INTERVAL.fullmatch(cell), (css, cell)


def test_the_run_json_has_every_interval_pair(
    app_client: TestClient, filled_sqlite: Filled
) -> None:
    run_id = filled_sqlite.regression_ids[0]
    with open_store(filled_sqlite.url) as store:
        r = store.get_run(run_id).result
    data = app_client.get(f"/api/runs/{run_id}").json()
    n = r.question_count
    assert data["run"]["top1_hit_rate_ci"] == pytest.approx(list(wilson(r.top1_hits, n) or ()))
    assert data["run"]["top3_hit_rate_ci"] == pytest.approx(list(wilson(r.top3_hits, n) or ()))
    for dim, slices in (("by_form", r.by_form), ("by_hard_class", r.by_hard_class)):
        for value, rates in slices.items():
            shown = data["run"][dim][value]
            for top, hits in ((1, rates.top1_hits), (3, rates.top3_hits)):
                expected = wilson(hits, rates.questions)
                pair = shown[f"top{top}_hit_rate_ci"]
                assert (pair is None) if expected is None else pair == pytest.approx(list(expected))
    assert data["baseline"]["top1_hit_rate_ci"] is not None


def test_overview_and_history_show_intervals(app_client: TestClient, filled_sqlite: Filled) -> None:
    with open_store(filled_sqlite.url) as store:
        latest = {run.result.retriever: run.result for run in store.latest_runs()}
        history = [run.result for run in store.history(SET, BM25)]
    overview = app_client.get("/").text
    for retriever, r in latest.items():
        row = re.search(
            rf'data-retriever="{re.escape(_attr(retriever))}">(.*?)</tr>', overview, re.S
        )
        assert row, retriever
        n = r.question_count
        assert _shown(r.top1_hit_rate, r.top1_hits, n) in row.group(1)
        assert _shown(r.top3_hit_rate, r.top3_hits, n) in row.group(1)
    page = app_client.get("/history", params={"set": SET, "retriever": BM25}).text
    for r in history:
        assert _shown(r.top1_hit_rate, r.top1_hits, r.question_count) in page
    newest = history[0]
    low, high = wilson(newest.top1_hits, newest.question_count) or (0.0, 0.0)
    assert (
        f'id="latest-top1-ci" title="95% Wilson interval">95% CI [{_pct(low)}, {_pct(high)}]'
        in page
    )
    for html in (overview, page):
        for css in ("top1", "top3"):
            cells = _cells(html, css)
            assert cells and all(WITH_INTERVAL.fullmatch(c) for c in cells), css


def _attr(text: str) -> str:
    """``text`` as Jinja escapes it inside an attribute (the markup retriever's name)."""
    from markupsafe import escape

    return str(escape(text))

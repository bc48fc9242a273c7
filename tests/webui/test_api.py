"""Every view's numbers match the stored runs, on SQLite and PostgreSQL, as JSON and as HTML."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from webui.fill import BM25, MARKUP, SET, TRUNCATED, Filled


def _pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.1f}%"


def _row(html: str, retriever_attr: str) -> str:
    """The overview table row of one retriever (rows carry data-retriever attributes)."""
    match = re.search(
        rf'<tr[^>]*data-retriever="{re.escape(retriever_attr)}"[^>]*>(.*?)</tr>', html, re.S
    )
    assert match, f"no overview row for {retriever_attr}"
    return match.group(1)


def test_overview_lists_every_pair_with_its_latest_run(client: TestClient, filled: Filled) -> None:
    data = client.get("/api/overview").json()
    with open_store(filled.url) as store:
        latest = {(r.result.set_identifier, r.result.retriever): r for r in store.latest_runs()}
        pairs = {(p["set"], p["retriever"]): p for p in data["pairs"]}
        assert set(pairs) == set(latest) == {(SET, BM25), (SET, TRUNCATED), (SET, MARKUP)}
        for key, stored in latest.items():
            shown = pairs[key]["latest"]
            assert shown["run_id"] == stored.id
            assert shown["top1_hit_rate"] == pytest.approx(stored.result.top1_hit_rate)
            assert shown["top3_hit_rate"] == pytest.approx(stored.result.top3_hit_rate)
            assert shown["verdict_state"] == stored.verdict_state
            verdict = stored.verdict
            assert verdict is not None
            assert shown["top1_delta"] == verdict.top1_delta
            history = store.history(SET, key[1], limit=12)
            assert [r["run_id"] for r in pairs[key]["recent"]] == [r.id for r in reversed(history)]
    bm25 = pairs[(SET, BM25)]
    assert [r["is_regression"] for r in bm25["recent"]] == [False, False, True, False]
    assert bm25["latest"]["verdict_state"] == "no_regression"


def test_overview_page_shows_the_same_figures(client: TestClient, filled: Filled) -> None:
    response = client.get("/")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/html")
    with open_store(filled.url) as store:
        for retriever in (BM25, TRUNCATED):
            stored = store.history(SET, retriever, limit=1)[0]
            row = _row(response.text, retriever)
            assert _pct(stored.result.top1_hit_rate) in row
            assert _pct(stored.result.top3_hit_rate) in row
            assert f"state-{stored.verdict_state}" in row
            assert "<svg" in row  # the sparkline


def test_history_matches_the_stored_runs(client: TestClient, filled: Filled) -> None:
    data = client.get("/api/history", params={"set": SET, "retriever": BM25}).json()
    with open_store(filled.url) as store:
        stored = list(reversed(store.history(SET, BM25)))
    assert [r["run_id"] for r in data["runs"]] == filled.run_ids[BM25] == [r.id for r in stored]
    assert data["regressions"] == filled.regression_ids
    for shown, run in zip(data["runs"], stored, strict=True):
        assert shown["top1_hit_rate"] == pytest.approx(run.result.top1_hit_rate)
        assert shown["top3_hit_rate"] == pytest.approx(run.result.top3_hit_rate)
        assert shown["latency_p95_ms"] == pytest.approx(run.result.latency_ms.p95)
        assert shown["is_regression"] == run.is_regression
        for value, rates in run.result.by_hard_class.items():
            assert shown["by_hard_class"][value]["top1_hit_rate"] == pytest.approx(
                rates.top1_hit_rate
            )
            assert shown["by_hard_class"][value]["questions"] == rates.questions
        assert set(shown["by_form"]) == set(run.result.by_form)


@pytest.mark.parametrize("dim", ["overall", "form", "hard_class"])
def test_history_page_draws_charts_with_the_regression_marked(
    client: TestClient, filled: Filled, dim: str
) -> None:
    response = client.get("/history", params={"set": SET, "retriever": BM25, "dim": dim})
    assert response.status_code == 200
    html = response.text
    charts = html.count('<svg class="chart"')
    assert charts == (2 if dim == "overall" else 3)  # rates (1 or top-1 + top-3) and latency
    # one red band per regressed run in every chart
    # each chart is drawn twice, for wide screens and for phones (CSS shows one)
    assert html.count('<svg class="chart-narrow"') == charts
    assert html.count('class="mark"') == 2 * charts * len(filled.regression_ids)
    with open_store(filled.url) as store:
        latest = store.history(SET, BM25, limit=1)[0]
    assert f'id="latest-top1">{_pct(latest.result.top1_hit_rate)}<' in html
    if dim == "hard_class":
        for value, rates in latest.result.by_hard_class.items():
            assert f"{value} ({rates.questions})" in html  # legend entry with its size


_FLIP_KEYS = (("top1_to_miss", "top3_to_miss"), ("top1_to_hit", "top3_to_hit"))


def test_run_view_matches_the_stored_run_and_its_flips(client: TestClient, filled: Filled) -> None:
    regressed = filled.regression_ids[0]
    data = client.get(f"/api/runs/{regressed}").json()
    with open_store(filled.url) as store:
        stored = store.get_run(regressed)
        baseline = store.get_run(stored.baseline_run_id or 0)
    assert data["run"]["top1_hits"] == stored.result.top1_hits
    assert data["run"]["top3_hit_rate"] == pytest.approx(stored.result.top3_hit_rate)
    assert data["run"]["verdict_state"] == "regression"
    assert data["baseline"]["run_id"] == baseline.id
    # every question once (the demo fits one page), the flipped and missed ones listed first
    assert sorted(q["id"] for q in data["questions"]) == sorted(
        q.id for q in stored.result.questions
    )
    assert data["listing"]["pages"] == 1
    flipped = [{f["id"] for k in keys for f in data["flips"][k]} for keys in _FLIP_KEYS]

    def group(q: dict[str, Any]) -> int:
        if q["id"] in flipped[0] or q["id"] in flipped[1]:
            return 0 if q["id"] in flipped[0] else 1
        return 2 if not q["top3_hit"] else 3 if not q["top1_hit"] else 4

    groups = [group(q) for q in data["questions"]]
    assert groups == sorted(groups) and groups[0] == 0
    by_id = {q.id: q for q in stored.result.questions}
    for shown in data["questions"]:
        q = by_id[shown["id"]]
        assert (shown["top1_hit"], shown["first_hit_rank"], shown["retrieved"]) == (
            q.top1_hit,
            q.first_hit_rank,
            q.retrieved,
        )
    # flips agree with a comparison of the two stored runs done here, question by question
    before = {q.id: q.top1_hit for q in baseline.result.questions}
    to_miss = [q.id for q in stored.result.questions if before[q.id] and not q.top1_hit]
    to_hit = [q.id for q in stored.result.questions if not before[q.id] and q.top1_hit]
    assert [f["id"] for f in data["flips"]["top1_to_miss"]] == to_miss
    assert [f["id"] for f in data["flips"]["top1_to_hit"]] == to_hit
    assert to_miss  # the reversed ranking does lose questions
    assert data["run"]["by_form"]["match"]["top1_hit_rate"] == pytest.approx(
        stored.result.by_form["match"].top1_hit_rate
    )


def test_run_page_lists_questions_flips_and_slices(client: TestClient, filled: Filled) -> None:
    regressed = filled.regression_ids[0]
    html = client.get(f"/runs/{regressed}").text
    with open_store(filled.url) as store:
        stored = store.get_run(regressed)
    assert html.count("<tr data-question-id=") == stored.result.question_count
    assert f'id="top1">{_pct(stored.result.top1_hit_rate)}<' in html
    assert 'data-kind="top1_to_miss"' in html
    assert "hard class" in html and "near-duplicate" in html
    misses = client.get(f"/runs/{regressed}", params={"show": "misses"}).text
    expected = sum(1 for q in stored.result.questions if not q.top3_hit)
    assert misses.count("<tr data-question-id=") == expected


def test_unknown_things_are_404_and_bad_queries_400(client: TestClient) -> None:
    assert client.get("/api/runs/999999").status_code == 404
    assert client.get("/runs/999999").status_code == 404
    missing = client.get("/api/history", params={"set": SET, "retriever": "nope"})
    assert missing.status_code == 404 and "nope" in missing.json()["detail"]
    assert client.get("/api/compare", params={"set": "no.such.set"}).status_code == 404
    bad = client.get("/history", params={"set": SET})  # no retriever
    assert bad.status_code == 400 and "retriever" in bad.text
    assert client.get("/no-such-page").status_code == 404


def test_a_missing_store_shows_no_runs_and_is_not_created(tmp_path: Path) -> None:
    path = tmp_path / "not-yet" / "results.sqlite"
    client = TestClient(create_app(f"sqlite:///{path}", require_auth=False))
    assert client.get("/api/overview").json() == {"pairs": [], "replays": []}
    assert "No runs stored yet" in client.get("/").text
    assert not path.exists()  # the dashboard never writes, not even an empty file


def test_an_unreachable_store_is_503_without_the_password() -> None:
    url = "postgresql://reader:s3cret-pw@127.0.0.1:1/results"  # nothing listens on port 1
    client = TestClient(create_app(url, require_auth=False))
    for path in ("/api/overview", "/"):
        response = client.get(path)
        assert response.status_code == 503
        assert "s3cret-pw" not in response.text and "***" in response.text

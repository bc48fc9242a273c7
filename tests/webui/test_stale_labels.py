"""Stale labels on the run page and its JSON twin (issue 14): a question whose every target is gone
from the index is marked "stale label" with its dead ids, not shown as an ordinary miss; the page
carries the check's "labels need attention" line; ``show=stale`` lists exactly those questions.

The store is a real SQLite file: a baseline where every question is answered, then a run after
an "index rebuild" that lost four documents (three questions lose every target, one loses one of
its two), judged and saved as ``record_run`` does; and a run with no check, for the absent cases.
The pages are read through the app (Starlette's test client) and, at phone width, in headless
Chromium.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from store.builders import hits, make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import QuestionResult, RunResult
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import Recorded, record_run
from webui.browsing import serve

QUESTIONS = 30
STALE = ["q004", "q011", "q017"]  # every target gone
PARTLY = "q020"  # two targets, one gone (found the other): judged as usual, never marked stale
MISSED = "q025"  # an ordinary miss in both runs
DELETED = "deleted from the index since the label was written"


def _questions(*, after_rebuild: bool) -> list[QuestionResult]:
    questions = []
    for q in hits(QUESTIONS, QUESTIONS):
        expected = [*q.expected_document_ids, f"{q.expected_document_ids[0]}-b"]
        gone = after_rebuild and q.id in STALE
        missed = q.id == MISSED
        questions.append(
            q.model_copy(
                update={
                    "expected_document_ids": expected
                    if q.id == PARTLY
                    else q.expected_document_ids,
                    "top1_hit": not (gone or missed),
                    "top3_hit": not (gone or missed),
                    "first_hit_rank": None if gone or missed else 1,
                    "retrieved": ["other"] if gone or missed else q.retrieved,
                }
            )
        )
    return questions


def _dead() -> DeadLabels:
    return DeadLabels(
        checked=True,
        source="lexical corpus",
        dead_ids=sorted([*(f"doc-{q}" for q in STALE), f"doc-{PARTLY}-b"]),
        stale_questions=STALE,
        partly_dead={PARTLY: [f"doc-{PARTLY}-b"]},
    )


@dataclass
class Stored:
    client: TestClient
    app: Any
    baseline: int
    stale: int
    unchecked: int
    compared: int  # "other" again, compared with its first run, nothing left out


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stored]:
    url = f"sqlite:///{tmp_path_factory.mktemp('stale') / 'results.sqlite'}"
    thresholds = Thresholds()

    def record(result: RunResult) -> Recorded:
        recorded = record_run(result, store_url=url, thresholds=thresholds)
        assert recorded.run_id is not None
        return recorded

    baseline = record(make_run(_questions(after_rebuild=False)))
    rebuilt = make_run(_questions(after_rebuild=True), day=1)
    stale = record(rebuilt.model_copy(update={"dead_labels": _dead()}))
    # three of 30 questions lost: a 10-point drop, explained entirely by dead labels
    assert stale.verdict.state == "no_regression" and stale.verdict.stale_questions == STALE
    unchecked = record(make_run(_questions(after_rebuild=False), retriever="other"))
    moved = [
        q.model_copy(update={"top1_hit": False}) if q.id == "q001" else q
        for q in _questions(after_rebuild=False)
    ]
    compared = record(make_run(moved, retriever="other", day=1))
    assert compared.verdict.top1_delta is not None and compared.verdict.top1_delta < 0
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        assert baseline.run_id and stale.run_id and unchecked.run_id and compared.run_id
        ids = (baseline.run_id, stale.run_id, unchecked.run_id, compared.run_id)
        yield Stored(client, app, *ids)
    app.state.store_source.close()


def _rows(html: str) -> dict[str, str]:
    """Question id -> its table row's HTML."""
    return dict(re.findall(r'<tr data-question-id="([^"]+)"[^>]*>(.*?)</tr>', html, flags=re.S))


def test_stale_questions_carry_their_dead_ids_in_the_json(stored: Stored) -> None:
    data = stored.client.get(f"/api/runs/{stored.stale}").json()
    by_id = {q["id"]: q for q in data["questions"]}
    assert len(by_id) == QUESTIONS
    marked = {qid: q["dead_ids"] for qid, q in by_id.items() if q["stale_label"]}
    assert marked == {qid: [f"doc-{qid}"] for qid in STALE}
    # a partly dead question is not stale but names its dead id; an ordinary miss names none
    assert by_id[PARTLY]["stale_label"] is False and by_id[PARTLY]["dead_ids"] == [
        f"doc-{PARTLY}-b"
    ]
    assert by_id[MISSED]["stale_label"] is False and by_id[MISSED]["dead_ids"] == []
    assert data["listing"]["stale_count"] == len(STALE)
    assert data["labels_summary"].startswith("labels need attention: 4 ids no longer in the index")
    assert "3 stale questions, 1 partly dead; lexical corpus" in data["labels_summary"]
    # order: the ordinary miss, then the stale labels, then the hits
    order = [q["id"] for q in data["questions"]]
    assert order[: 1 + len(STALE)] == [MISSED, *STALE]


def test_the_run_page_marks_stale_labels_apart_from_misses(stored: Stored) -> None:
    html = stored.client.get(f"/runs/{stored.stale}").text
    line = re.search(r'<p class="summary state-labels" id="labels">(.*?)</p>', html, flags=re.S)
    assert line is not None
    assert "labels need attention: 4 ids no longer in the index" in line.group(1)
    assert "show=stale" in line.group(1)
    rows = _rows(html)
    for qid in STALE:
        row = rows[qid]
        assert "stale label</span>" in row and '<span class="stale">stale</span>' in row
        assert f'<s class="dead" title="{DELETED}">doc-{qid}</s>' in row
        assert "no longer in the index" in row
        assert '<span class="no">miss</span>' not in row and "not retrieved" not in row
    for qid in (MISSED, PARTLY):
        assert "stale label" not in rows[qid]
    assert '<span class="no">miss</span>' in rows[MISSED] and "in the index" not in rows[MISSED]
    # the filter offers the stale labels
    assert '<option value="stale">stale labels</option>' in html


def test_show_stale_lists_exactly_the_stale_labels(stored: Stored) -> None:
    data = stored.client.get(f"/api/runs/{stored.stale}", params={"show": "stale"}).json()
    assert [q["id"] for q in data["questions"]] == STALE
    assert data["listing"]["matching"] == len(STALE) and data["listing"]["show"] == "stale"
    html = stored.client.get(f"/runs/{stored.stale}", params={"show": "stale"}).text
    assert list(_rows(html)) == STALE
    assert "(3 of 30 questions" in html and "<strong>stale labels</strong>" in html
    # misses still include them: they are misses in the run's figures
    misses = stored.client.get(f"/api/runs/{stored.stale}", params={"show": "misses"}).json()
    assert {q["id"] for q in misses["questions"]} == {MISSED, *STALE}


def test_a_run_without_dead_labels_shows_no_marker(stored: Stored) -> None:
    for run_id in (stored.baseline, stored.unchecked):
        data = stored.client.get(f"/api/runs/{run_id}").json()
        assert data["labels_summary"] is None and data["listing"]["stale_count"] == 0
        assert not any(q["stale_label"] for q in data["questions"])
        html = stored.client.get(f"/runs/{run_id}").text
        assert 'id="labels"' not in html and "stale label" not in html
        assert '<option value="stale">' not in html
        # the filter is well formed, and matches nothing: one empty page, not an error
        empty = stored.client.get(f"/api/runs/{run_id}", params={"show": "stale"})
        assert empty.status_code == 200 and empty.json()["questions"] == []
    bad = stored.client.get(f"/api/runs/{stored.stale}", params={"show": "stale-ish"})
    assert bad.status_code == 400


@pytest.mark.browser
def test_the_stale_marker_reads_at_phone_width(
    stored: Stored, browser: Any, tmp_path: Path
) -> None:
    for base in serve(stored.app):
        context = browser.new_context(viewport={"width": 390, "height": 844})
        try:
            page = context.new_page()
            assert page.goto(f"{base}/runs/{stored.stale}?show=stale").status == 200
            scroll = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
            assert scroll[0] <= scroll[1], f"the stale page scrolls sideways: {scroll}"
            for selector in ("#labels", "tr.stale .badge.state-stale", "tr.stale .ids .dead"):
                assert page.locator(selector).first.is_visible(), selector
            page.screenshot(path=str(tmp_path / "run-stale-phone.png"), full_page=True)
        finally:
            context.close()


def test_a_partly_dead_question_flags_its_dead_id_not_as_not_retrieved(stored: Stored) -> None:
    """Its gone target is "no longer in the index"; the target it found stays an ordinary one."""
    row = _rows(stored.client.get(f"/runs/{stored.stale}").text)[PARTLY]
    gone, found = f"doc-{PARTLY}-b", f"doc-{PARTLY}"
    assert f'<s class="dead" title="{DELETED}">{gone}</s>' in row
    assert '<span class="flag dead">no longer in the index</span>' in row
    assert "not retrieved" not in row and f'<span class="found">{found}</span>' in row
    assert '<span class="yes">hit</span>' in row  # judged as usual


def _compared() -> tuple[int, float]:
    """The questions the stale run's verdict compared and the top-1 rate of each run on them
    (the same in both: only the ordinary miss misses there)."""
    compared = QUESTIONS - len(STALE)
    return compared, (compared - 1) / compared


def test_the_delta_names_the_questions_and_rates_it_is_over(stored: Stored) -> None:
    """The run card put "+0.0 pts" next to a rate over all 30 questions (with the 3 stale
    ones as misses) though the Δ is over the 27 compared: it now says so, with their rates."""
    compared, rate = _compared()
    on = f"on the {compared} questions compared ({rate * 100:.1f}% → {rate * 100:.1f}%)"
    data = stored.client.get(f"/api/runs/{stored.stale}").json()["run"]
    assert data["compared_questions"] == compared
    for key in ("top1", "top3"):
        assert data[f"{key}_baseline"] == pytest.approx(rate)
        assert data[f"{key}_current"] == pytest.approx(rate)
    # the overall rate beside it is not the compared one
    assert data["top1_hit_rate"] == pytest.approx((QUESTIONS - len(STALE) - 1) / QUESTIONS)
    html = stored.client.get(f"/runs/{stored.stale}").text
    for key in ("top1", "top3"):
        card = re.search(rf'<div class="value" id="{key}">.*?</div></div>', html, flags=re.S)
        assert card is not None and on in card.group(0), key
    history = stored.client.get("/history", params={"set": "demo.set", "retriever": "bm25"})
    row = re.search(rf'<tr data-run-id="{stored.stale}">(.*?)</tr>', history.text, flags=re.S)
    assert row is not None and row.group(1).count(on) == 2
    runs = stored.client.get("/api/history", params={"set": "demo.set", "retriever": "bm25"})
    by_id = {run["run_id"]: run for run in runs.json()["runs"]}
    assert by_id[stored.stale]["compared_questions"] == compared
    assert by_id[stored.stale]["top1_baseline"] == pytest.approx(rate)
    overview = stored.client.get("/").text
    assert on in overview


def test_a_delta_over_every_question_is_not_qualified(stored: Stored) -> None:
    """Nothing left out (or nothing compared): no compared fields, no "questions compared"."""
    for run_id in (stored.baseline, stored.unchecked, stored.compared):
        run = stored.client.get(f"/api/runs/{run_id}").json()["run"]
        assert run["compared_questions"] is None and run["top1_baseline"] is None
        assert "questions compared" not in stored.client.get(f"/runs/{run_id}").text
    history = stored.client.get("/history", params={"set": "demo.set", "retriever": "other"})
    assert history.status_code == 200 and "questions compared" not in history.text
    # the compared run has a delta, over every question: shown plainly
    run = stored.client.get(f"/api/runs/{stored.compared}").json()["run"]
    assert run["top1_delta"] == pytest.approx(-1 / QUESTIONS)
    assert f"{-100 / QUESTIONS:+.1f} pts</span></td>" in history.text


def test_history_and_overview_say_which_runs_have_dead_labels(stored: Stored) -> None:
    """The CLI's history says "(labels: 4 dead ids)" and names the runs; the dashboard's
    history rows, its charts' marks, its closing line and the overview row say the same."""
    params = {"set": "demo.set", "retriever": "bm25"}
    html = stored.client.get("/history", params=params).text
    rows = dict(re.findall(r'<tr data-run-id="(\d+)">(.*?)</tr>', html, flags=re.S))
    assert "labels: 4 dead ids</span>" in rows[str(stored.stale)]
    assert "dead id" not in rows[str(stored.baseline)]
    # the rate and latency charts mark the stale run (wide and phone copies), legends say why
    assert html.count('<g class="mark-labels">') == 4
    assert html.count('data-kind="labels"') == 4
    line = re.search(r'<p class="summary state-labels" id="labels">(.*?)</p>', html, flags=re.S)
    assert line is not None
    assert f'show=stale#questions">{stored.stale}</a> found expected ids no longer' in line.group(1)
    runs = stored.client.get("/api/history", params=params).json()["runs"]
    assert {r["run_id"]: r["dead_label_count"] for r in runs} == {
        stored.baseline: 0,
        stored.stale: 4,
    }
    clean = stored.client.get("/history", params={**params, "retriever": "other"}).text
    assert 'id="labels"' not in clean and "mark-labels" not in clean
    overview = stored.client.get("/").text
    row = re.search(r'<tr [^>]*data-retriever="bm25">(.*?)</tr>', overview, flags=re.S)
    assert row is not None and "labels: 4 dead ids" in row.group(1)
    assert 'class="spark-labels"' in row.group(1)


def test_slice_rates_leave_the_stale_questions_out_as_the_verdict_does(stored: Stored) -> None:
    """The slice table counted the 3 stale questions as misses (86.7 % top-1 beside a green
    verdict); it now shows the rates the verdict judged, over the 27 questions left, for this
    run and its baseline, and says how many it left out."""
    compared, rate = _compared()
    data = stored.client.get(f"/api/runs/{stored.stale}").json()
    judged = data["judged_slices"]
    assert judged["left_out"] == STALE and judged["questions"] == compared
    assert judged["stale_by_form"] == {"match": len(STALE)} and judged["stale_by_hard_class"] == {}
    match = judged["by_form"]["match"]
    assert match["questions"] == compared and match["top1_hit_rate"] == pytest.approx(rate)
    assert judged["baseline_by_form"]["match"]["top1_hit_rate"] == pytest.approx(rate)
    # the run's own slice still counts them (what the JSON's run.by_form says)
    own = data["run"]["by_form"]["match"]["top1_hit_rate"]
    assert own == pytest.approx((QUESTIONS - len(STALE) - 1) / QUESTIONS)
    html = stored.client.get(f"/runs/{stored.stale}").text
    note = re.search(r'<p class="muted" id="slices-judged">(.*?)</p>', html, flags=re.S)
    assert note is not None
    assert f"over {compared} of {QUESTIONS} questions, the 3 stale questions" in note.group(1)
    row = re.search(r'<tr data-dimension="by_form" data-value="match">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = re.findall(r"<td[^>]*>(.*?)</td>", row.group(1), flags=re.S)
    assert cells[2:4] == [str(compared), "3"]  # questions judged, stale left out
    assert cells[4].startswith(f"{rate * 100:.1f}%") and cells[6].startswith(f"{rate * 100:.1f}%")
    for run_id in (stored.baseline, stored.compared):  # nothing left out: the run's own rates
        assert stored.client.get(f"/api/runs/{run_id}").json()["judged_slices"] is None
        assert 'id="slices-judged"' not in stored.client.get(f"/runs/{run_id}").text

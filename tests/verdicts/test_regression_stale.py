"""Stale labels in the verdict: questions whose every target is dead are left out of BOTH runs."""

from __future__ import annotations

import json

import pytest
from store.builders import as_stored, hits, make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.reports.verdict import render_verdict, verdict_summary
from retrieval_eval.store.rows import result_row, stored_run
from retrieval_eval.verdicts.regression import detect_regression

DEFAULT = Thresholds()


def with_dead(
    run: RunResult, stale: list[str], partly: dict[str, list[str]] | None = None
) -> RunResult:
    """``run`` with a dead-label check: every target of ``stale`` (``doc-<id>``) is dead."""
    dead = sorted({f"doc-{q}" for q in stale} | {d for ids in (partly or {}).values() for d in ids})
    labels = DeadLabels(
        checked=True,
        source="corpus",
        dead_ids=dead,
        stale_questions=stale,
        partly_dead=partly or {},
    )
    return run.model_copy(update={"dead_labels": labels})


def test_a_drop_explained_entirely_by_dead_labels_is_not_a_regression() -> None:
    baseline = as_stored(make_run(hits(8, 10)))
    # the index lost the targets of q000..q002: they miss now, the rest are unchanged
    questions = hits(8, 10)
    for q in questions[:3]:
        q.top1_hit = q.top3_hit = False
    current = make_run(questions, day=1)
    assert detect_regression(current, baseline, DEFAULT).state == "regression"  # -30 pts
    stale = ["q000", "q001", "q002"]
    verdict = detect_regression(with_dead(current, stale), baseline, DEFAULT)
    assert verdict.state == "no_regression" and not verdict.is_regression
    assert verdict.stale_questions == stale
    assert verdict.dead_ids == ["doc-q000", "doc-q001", "doc-q002"]
    # rates over the 7 judged questions, in both runs; no flips from the stale ones
    assert verdict.top1_baseline == pytest.approx(5 / 7)
    assert verdict.top1_current == pytest.approx(5 / 7)
    assert verdict.flipped_to_miss == [] and verdict.p_value == 1.0
    assert "3 stale-label questions" in verdict_summary(verdict)
    assert "labels need attention: 3 ids no longer in the index" in verdict_summary(verdict)
    text = render_verdict(verdict)
    assert "Labels need attention: 3 ids no longer in the index" in text
    assert "q000, q001, q002" in text


def test_a_real_drop_beside_dead_labels_is_still_a_regression() -> None:
    baseline = as_stored(make_run(hits(10, 10)))
    questions = hits(10, 10)
    for q in questions[:5]:  # two stale, three genuine misses
        q.top1_hit = q.top3_hit = False
    verdict = detect_regression(
        with_dead(make_run(questions, day=1), ["q000", "q001"]), baseline, DEFAULT
    )
    assert verdict.state == "regression"
    assert verdict.top1_current == pytest.approx(5 / 8)  # 3 genuine misses of 8 judged
    assert verdict.flipped_to_miss == ["q002", "q003", "q004"]


def test_the_baselines_stale_questions_are_left_out_too() -> None:
    # the baseline ran while q000's target was gone; the current run has it back and hits it
    baseline_run = make_run(
        hits(
            5,
            10,
        ),
        day=0,
    )
    questions = hits(5, 10)
    questions[0].top1_hit = questions[0].top3_hit = True
    base = with_dead(
        baseline_run.model_copy(
            update={
                "questions": [
                    q.model_copy(update={"top1_hit": False, "top3_hit": False})
                    if q.id == "q000"
                    else q
                    for q in baseline_run.questions
                ]
            }
        ),
        ["q000"],
    )
    verdict = detect_regression(make_run(questions, day=1), as_stored(base), DEFAULT)
    assert verdict.stale_questions == ["q000"] and verdict.dead_ids == []
    assert verdict.flipped_to_hit == []  # the stale question is not counted as recovered


def test_partly_dead_questions_are_judged() -> None:
    baseline = as_stored(make_run(hits(8, 10)))
    current = with_dead(make_run(hits(8, 10), day=1), [], {"q000": ["doc-other"]})
    verdict = detect_regression(current, baseline, DEFAULT)
    assert verdict.state == "no_regression" and verdict.stale_questions == []
    assert verdict.dead_ids == ["doc-other"] and verdict.top1_current == pytest.approx(0.8)


def test_without_a_baseline_the_verdict_still_names_the_dead_labels() -> None:
    verdict = detect_regression(with_dead(make_run(hits(8, 10)), ["q009"]), None, DEFAULT)
    assert verdict.state == "baseline"
    assert verdict.dead_ids == ["doc-q009"] and verdict.stale_questions == ["q009"]
    assert "labels need attention: 1 id no longer in the index" in verdict_summary(verdict)


def test_dead_labels_are_stored_in_details_and_read_back() -> None:
    run = with_dead(make_run(hits(8, 10)), ["q009"])
    row = result_row(run, None)
    details = json.loads(json.dumps(row["details"]))  # JSON as a store keeps it
    questions = [
        {"position": n, "question_id": q.id, **q.model_dump(mode="json", exclude={"id"})}
        for n, q in enumerate(run.questions)
    ]
    back = stored_run({**row, "id": 1, "details": details}, questions, [])
    assert back.result.dead_labels == run.dead_labels
    assert back.result.stale_targets() == {"q009": ["doc-q009"]}
    # a run stored before the check existed has no dead_labels
    old = stored_run({**row, "id": 2, "details": {**details, "dead_labels": None}}, questions, [])
    assert old.result.dead_labels is None and old.result.stale_targets() == {}


def test_contract_marks_stale_questions() -> None:
    contract = with_dead(make_run(hits(8, 10)), ["q009"]).contract()
    assert contract["dead_labels"]["stale_questions"] == ["q009"]
    stale = [q for q in contract["questions"] if q.get("stale_label")]
    assert [(q["id"], q["dead_ids"]) for q in stale] == [("q009", ["doc-q009"])]
    assert make_run(hits(8, 10)).contract()["dead_labels"] is None


def test_reports_mark_stale_questions_with_their_dead_ids() -> None:
    from retrieval_eval.reports.markdown import render_markdown
    from retrieval_eval.reports.text import render_text

    run = with_dead(make_run(hits(8, 10)), ["q009"])
    verdict = detect_regression(run, None, DEFAULT)
    for text in (render_text(run, width=200), render_markdown(run, verdict)):
        line = next(line for line in text.splitlines() if "q009" in line and "stale" in line)
        assert "stale label: doc-q009 no longer in the index" in line
        assert "miss" not in line
    assert "Labels need attention" in render_markdown(run, verdict)

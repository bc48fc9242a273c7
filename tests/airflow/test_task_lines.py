"""The DAGs' Airflow-only pieces as plain functions: the task log lines, the branch choice, the
run page base. The replay DAG's reduce and record steps with the store down:
test_replay_steps_spool.py."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval_eval.airflow.branching import (
    BRANCH_BASELINE,
    BRANCH_DRIFT,
    BRANCH_INVALID,
    BRANCH_INVALID_REPLAY,
    BRANCH_LABELS,
    BRANCH_OK,
    BRANCH_REGRESSION,
    choose_branch,
    choose_branches,
    drift_branch,
)
from retrieval_eval.airflow.lines import (
    plan_line,
    replay_line,
    sample_line,
    score_line,
    verdict_line,
)
from retrieval_eval.replay.record import Ranking, ReplayRecord
from retrieval_eval.replay.samples import QuerySample, SampledQuery


def test_the_log_lines_say_the_figures_the_verdict_and_the_link() -> None:
    result = {
        "set_identifier": "handbook.demo",
        "retriever": "bm25",
        "question_count": 16,
        "error_count": 0,
        "top1_hits": 2,
        "top1_hit_rate": 0.125,
        "top3_hits": 4,
        "top3_hit_rate": 0.25,
    }
    assert score_line(result) == (
        "scored 16 questions of handbook.demo × bm25: top-1 12.5% (2/16), "
        "top-3 25.0% (4/16); 0 errors"
    )
    verdict = {
        "state": "regression",
        "top1_baseline": 0.6875,
        "top1_current": 0.125,
        "top1_delta": -0.5625,
        "top3_baseline": 0.75,
        "top3_current": 0.25,
        "top3_delta": -0.5,
    }
    line = verdict_line({"run_id": 12, "verdict": verdict}, "http://af/re/", result)
    assert line == (
        "top-1 68.8% → 12.5% (-56.2 pts), top-3 75.0% → 25.0% (-50.0 pts); regression; "
        "run 12: http://af/re/runs/12"
    )
    first = {
        "run_id": 1,
        "verdict": {"state": "baseline", "dead_ids": ["a"], "baseline_refused": True},
    }
    assert verdict_line(first, None, result) == (
        "top-1 12.5% (2/16), top-3 25.0% (4/16); baseline (not accepted as the baseline: dead "
        "labels); labels need attention: 1 id no longer found; run 1"
    )
    assert "{" not in verdict_line(first)


def test_the_run_page_base_falls_back_to_the_airflow_the_task_runs_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log lines and the persist task's extra link name a run page even without
    ``airflow.ui_base_url``: Airflow's own ``[api] base_url``, else its UI's origin."""
    from retrieval_eval.airflow.links import dashboard_url

    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://af.example/")
    assert dashboard_url("https://dash.example/re") == "https://dash.example/re"
    assert dashboard_url(None) == "https://af.example/retrieval-eval"
    monkeypatch.delenv("AIRFLOW__API__BASE_URL")
    assert dashboard_url(None) == "/retrieval-eval"


def test_the_branch_follows_the_verdict_and_labels_alert_beside_it() -> None:
    assert choose_branch({"verdict": {"state": "baseline"}}) == BRANCH_BASELINE
    assert choose_branch({"verdict": {"state": "no_regression"}}) == BRANCH_OK
    assert choose_branch({"verdict": {"state": "not_comparable"}}) == BRANCH_OK
    assert choose_branch({"verdict": {"state": "regression"}}) == BRANCH_REGRESSION
    assert choose_branch({"verdict": {"state": "invalid_run"}}) == BRANCH_INVALID
    dead = {"run_id": 3, "verdict": {"state": "baseline", "dead_ids": ["a"]}}
    assert choose_branches(dead) == [BRANCH_BASELINE, BRANCH_LABELS]
    assert choose_branches({"verdict": {"state": "regression"}}) == [BRANCH_REGRESSION]


def test_the_plan_line_counts_batches_and_questions() -> None:
    batches = [{"start": 0, "stop": 12}, {"start": 12, "stop": 23}]
    assert plan_line(batches, {}) == "planned 2 batches of 23 questions"
    assert plan_line([{"start": 0, "stop": 1}], {}) == "planned 1 batch of 1 question"


def test_a_replays_lines_and_branch_read_its_record_as_the_xcom_carries_it() -> None:
    """The replay DAG's plan line, record line (the headline on one line, then the replay's
    page) and drift branch, from the JSON its tasks return."""
    sample = QuerySample(
        "top", "plain", tuple(SampledQuery(f"k{i}", f"q{i}", 1, "head") for i in range(3)), 3, 3
    )
    record = ReplayRecord.of_sample(
        sample,
        run_key="r",
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
        retriever="bm25",
        k=3,
        p=0.9,
        rankings=[Ranking(f"k{i}", ("a", "b"), None) for i in range(3)],
        before=[Ranking(f"k{i}", ("b", "a"), None) for i in range(3)],
        compare_with="replay",
        compared_id=1,
        replay_id=2,
    )
    saved = record.model_dump(mode="json")
    batches = [{"start": 0, "stop": 2}, {"start": 2, "stop": 3}]
    assert sample_line(batches, {"sample": "top"}) == "sample top: 3 queries in 2 batches"
    line = replay_line(saved, {"ui_base_url": "http://airflow.example/retrieval-eval"})
    assert line.startswith(
        "RANKING DRIFT: sample top (3 queries), retriever bm25 against replay 1; "
    )
    assert "top-1 changed 100.0% (3/3)" in line and "\n" not in line
    assert line.endswith(" — http://airflow.example/retrieval-eval/replays/2")
    assert drift_branch(record.comparison.state) == BRANCH_DRIFT
    assert drift_branch("empty") == drift_branch("invalid") == BRANCH_INVALID_REPLAY

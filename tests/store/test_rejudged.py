"""sets rejudge's edges: rankings too short for the depths gated now, questions the run never
asked, invalid runs, bad --runs; and the 0007 migration on both backends."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from alembic import command
from sqlalchemy import inspect, text

from retrieval_eval import FunctionRetriever, evaluate
from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.migrate import HEAD, alembic_config
from retrieval_eval.workflows.recording import judge_and_save
from retrieval_eval.workflows.rejudge import rejudge_runs, rejudged_result


def _set(targets: dict[str, str], texts: dict[str, str] | None = None) -> GoldenQuestionSet:
    texts = texts or {}
    return GoldenQuestionSet(
        identifier="edge",
        questions=[
            GoldenQuestion(id=q, question=texts.get(q, q), form="match", expected_document_ids=(d,))
            for q, d in targets.items()
        ],
    )


def _search(question: str, limit: int) -> list[str]:
    return [f"{question}-{rank}" for rank in range(1, 9)][:limit]


def test_too_short_rankings_say_which_depths_and_metrics_are_left_out(store: Store) -> None:
    v1 = _set({"a": "a-1", "b": "b-2", "c": "c-1"})
    run = evaluate(v1, FunctionRetriever(_search, "bm25"), RunSettings())  # keeps 3 per question
    saved = judge_and_save(store, run, Thresholds()).run_id
    assert saved is not None
    # new labels: b's target is now at rank 5, c was reworded, d is new
    v2 = _set({"a": "a-1", "b": "b-5", "c": "c-1", "d": "d-1"}, {"c": "c again"})
    result = rejudged_result(store.get_run(saved), v2, depths=[1, 3, 5])
    assert result.rejudged is not None
    assert result.depths == [1, 3] and result.rejudged.depths_not_judged == [5]
    assert result.rejudged.known_depth == 3 and result.known_depth == 3
    assert result.rejudged.not_asked == ["c", "d"] and "mrr" not in result.metrics
    assert [(q.id, q.top3_hit) for q in result.questions] == [("a", True), ("b", False)]
    assert result.rejudged.shortfall() == (
        "top-5 not judged: the stored rankings hold 3 documents; not recomputed: mrr; "
        "2 question(s) the run never asked left out"
    )
    # hit@k at k <= the stored depth is what a fresh run gives
    fresh = evaluate(v2, FunctionRetriever(_search, "bm25"), RunSettings())
    assert [q.top1_hit for q in result.questions] == [q.top1_hit for q in fresh.questions[:2]]


def test_a_rejudged_verdict_stores_which_run_and_labels_and_words_them(store: Store) -> None:
    v1 = _set({"a": "a-1", "b": "b-2"})
    saved = judge_and_save(store, evaluate(v1, FunctionRetriever(_search, "bm25")), Thresholds())
    v2 = _set({"a": "a-1", "b": "b-1"})
    (done,) = rejudge_runs(store, v2, store.runs.runs_of_set("edge"), lambda _r: Thresholds())
    assert done.outcome == "rejudged" and done.rejudged_id is not None
    verdict = store.get_run(done.rejudged_id).verdict
    assert verdict is not None and verdict.summary == ""  # stored as data
    assert (verdict.rejudged_from, verdict.labels_fingerprint) == (saved.run_id, v2.fingerprint)
    assert verdict_summary(verdict).startswith(
        f"Re-judged run {saved.run_id} against labels fingerprint {v2.fingerprint[:12]}. "
    )


def test_invalid_runs_are_skipped_and_bad_run_ids_are_named(store: Store) -> None:
    v1 = _set({"a": "a-1"})

    def down(question: str, limit: int) -> list[str]:
        raise RuntimeError("index down")

    invalid = judge_and_save(store, evaluate(v1, FunctionRetriever(down, "bm25")), Thresholds())
    v2 = _set({"a": "a-2"})
    done = rejudge_runs(store, v2, store.runs.runs_of_set("edge"), lambda _r: Thresholds())
    assert [(d.run_id, d.outcome) for d in done] == [(invalid.run_id, "invalid")]
    with pytest.raises(UnknownNameError, match="no stored run with id 999"):
        store.runs.runs_of_set("edge", ids=[999])
    with pytest.raises(InvalidInputError, match="not of 'other'"):
        store.runs.runs_of_set("other", ids=[invalid.run_id or 0])


def test_upgrading_from_0006_adds_the_columns_and_old_rows_read_as_not_rejudged(
    store_url: str,
) -> None:
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0006_depths")
            conn.execute(
                text(
                    "INSERT INTO eval_result (set_identifier, model_id, grader, prompt_count, "
                    "passed_count, pass_rate, mean_score, run_date, created_at, run_key) VALUES "
                    "('edge', 'bm25', 'retrieval_hit_rate', 1, 1, 1.0, 1.0, :t, :t, 'old')"
                ),
                {"t": datetime(2026, 11, 1, tzinfo=UTC)},
            )
        store.upgrade()
        assert store.revision() == HEAD
        columns = {c["name"] for c in inspect(store.engine).get_columns("eval_result")}
        assert {"rejudged_from", "set_version"} <= columns
    with open_store(store_url) as store:
        old = store.runs.by_key("old")
        assert old is not None and old.result.rejudged is None and old.result.set_version is None

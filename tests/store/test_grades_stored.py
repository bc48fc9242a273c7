"""A graded run's grades are stored with each question (0008_grades) and read back."""

from __future__ import annotations

from alembic import command
from sqlalchemy import inspect, update

from retrieval_eval.evaluation import metrics
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import score_many, summarise_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.store import Store
from retrieval_eval.store.migrate import HEAD, alembic_config
from retrieval_eval.store.schema import eval_result_question
from retrieval_eval.verdicts.regression import Verdict

GOLDEN = GoldenQuestionSet.model_validate(
    {
        "identifier": "graded",
        "questions": [
            {"id": "q1", "question": "a?", "form": "match", "grades": {"a": 3, "b": 1, "c": 0}},
            {"id": "q2", "question": "b?", "form": "gap", "expected_document_ids": ["x"]},
        ],
    }
)


def _run(level: int = 1):  # type: ignore[no-untyped-def]
    settings = RunSettings(cutoffs=[1, 3], relevance_level=level)
    questions = score_many(
        GOLDEN.questions, [["b", "a", "c"], ["y", "x"]], depth=settings.depth, relevance_level=level
    )
    return summarise_set(GOLDEN, questions, retriever="r", settings=settings)


def test_grades_and_the_level_are_stored_and_read_back(store: Store) -> None:
    result = _run(level=2)
    run_id = store.runs.save(result, Verdict(state="baseline"))
    again = store.get_run(run_id).result
    assert again.settings.relevance_level == 2
    # above level 1 an ungraded question's target is a judged grade 1: it counts in MRR and nDCG
    assert [q.grades for q in again.questions] == [{"a": 3, "b": 1, "c": 0}, {"x": 1}]
    assert [q.expected_document_ids for q in again.questions] == [("a",), ()]
    # the stored questions give the figures the run had: graded nDCG included
    assert metrics.compute(again.questions, [1, 3]) == result.metrics
    assert again.labels_fingerprint == result.labels_fingerprint != GOLDEN.fingerprint


def test_db_upgrade_adds_the_column_and_older_rows_read_as_ungraded(store_url: str) -> None:
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0006_depths")
        columns = {c["name"] for c in inspect(store.engine).get_columns("eval_result_question")}
        assert "grades" not in columns
        store.upgrade()
        assert store.revision() == HEAD
        run_id = store.runs.save(_run(), Verdict(state="baseline"))
        with store.engine.begin() as conn:  # as a row stored before grades existed
            conn.execute(update(eval_result_question).values(grades=None))
        assert [q.grades for q in store.get_run(run_id).result.questions] == [None, None]

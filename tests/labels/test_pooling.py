"""Pooling: candidates with their sources, holes per retriever, and SciFact's figures (docs/how-to/labels.md)."""

from __future__ import annotations

import pytest
from helpers import shared_collection

from retrieval_eval.golden.importers import import_beir
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.judged import judged_pairs
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.labels.pooling import pool
from retrieval_eval.retrievers.ranking import collapse
from retrieval_eval.retrievers.run_file import read_run


def tiny() -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="tiny",
        questions=[
            GoldenQuestion(id="q1", question="one", form="match", expected_document_ids=("a",)),
            GoldenQuestion(id="q2", question="two", form="gap", expected_document_ids=("b",)),
        ],
    )


def test_candidates_are_unlabelled_and_unjudged_and_say_where_they_came_from() -> None:
    rankings = {
        "bm25": {"q1": ["a", "x", "y"], "q2": ["z", "b"]},
        "dense": {"q1": ["x", "a"], "q2": ["b", "w"]},
    }
    judged = judged_pairs(rows=[Judgment(question_id="q2", document_id="w", grade=0, rater="ann")])
    result = pool(
        tiny(), rankings, depth=2, judged=judged, extra=[("q1", "c", "lint completeness")]
    )
    assert result.sources == {
        ("q1", "x"): ["bm25 #2", "dense #1"],
        ("q2", "z"): ["bm25 #1"],
        ("q1", "c"): ["lint completeness"],
    }
    assert (result.holes["bm25"].slots, result.holes["bm25"].unjudged) == (4, 2)
    assert result.holes["dense"].share == pytest.approx(1 / 4)  # w was judged (grade 0)
    rows = result.rows(tiny())
    assert [(r.question_id, r.document_id) for r in rows] == [("q1", "c"), ("q1", "x"), ("q2", "z")]
    assert all(r.grade is None for r in rows) and rows[1].source == "bm25 #2, dense #1"


def test_scifact_test_questions_pooled_over_bm25_and_dense_at_depth_10() -> None:
    scifact = shared_collection("scifact")
    golden = import_beir(scifact, "test")
    runs = {
        name: {q: collapse(ids) for q, ids in read_run(scifact / "runs" / f"{name}.run").items()}
        for name in ("bm25s", "dense_minilm")
    }
    result = pool(golden, runs, depth=10)
    bm25, dense = result.holes["bm25s"], result.holes["dense_minilm"]
    assert bm25.slots == dense.slots == 3000
    # docs/how-to/labels.md states these: most of a top 10 was never judged on SciFact
    assert (bm25.unjudged, dense.unjudged) == (2728, 2735)  # 90.9 % and 91.2 %
    assert len(result.sources) == 4691
    assert len(result.sources) < bm25.unjudged + dense.unjudged  # shared candidates merge

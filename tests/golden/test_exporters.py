"""Exporting golden sets as TREC qrels and runs as TREC run files, checked with pytrec_eval."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.exporters import qrels_lines, topics_lines, write_lines
from retrieval_eval.golden.importers import import_beir, read_qrels
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.reports.trec import run_lines
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.retrievers.run_file import RunFileRetriever, read_run


def small_set() -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="small",
        questions=[
            GoldenQuestion(
                id="a",
                question="two\ttargets\nhere",
                form="match",
                expected_document_ids=["d1", "d2"],
            ),
            GoldenQuestion(id="b", question="nothing answers this", form="gap"),
            GoldenQuestion(id="c", question="boom", form="match", expected_document_ids=["d3"]),
        ],
    )


def test_qrels_and_topics_lines() -> None:
    golden = small_set()
    assert qrels_lines(golden) == ["a 0 d1 1", "a 0 d2 1", "c 0 d3 1"]  # 'b' has no targets
    assert topics_lines(golden) == ["a\ttwo targets here", "b\tnothing answers this", "c\tboom"]


def test_run_lines_skip_failed_questions_and_keep_order() -> None:
    def search(question: str, limit: int) -> list[str]:
        if question == "boom":
            raise RuntimeError("index offline")
        return ["d2", "d2#dup", "d9", "d2", "d1"] if question.startswith("two") else []

    result = evaluate(small_set(), FunctionRetriever(search, "my retriever"))
    assert result.questions[2].error is not None
    assert run_lines(result) == [
        "a Q0 d2 1 3 my_retriever",
        "a Q0 d2#dup 2 2 my_retriever",
        "a Q0 d9 3 1 my_retriever",
    ]
    assert run_lines(result, tag="bm25")[0].endswith(" bm25")


def test_whitespace_in_ids_is_refused() -> None:
    golden = GoldenQuestionSet(
        identifier="bad",
        questions=[
            GoldenQuestion(id="q", question="x", form="match", expected_document_ids=["my doc.md"])
        ],
    )
    with pytest.raises(InvalidInputError, match=r"question 'q': document id 'my doc.md'"):
        qrels_lines(golden)


def test_exported_files_give_pytrec_eval_our_hit_rates(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    scifact = shared_collection("scifact")
    golden = import_beir(scifact, split="test", identifier="scifact")
    result = evaluate(golden, RunFileRetriever.from_file(scifact / "runs" / "bm25s.run"))

    qrels_path = write_lines(qrels_lines(golden), tmp_path / "scifact.qrels")
    run_path = write_lines(run_lines(result), tmp_path / "ours.run")
    qrels = read_qrels(qrels_path)
    run = {
        qid: {doc: float(len(ids) - i) for i, doc in enumerate(ids)}
        for qid, ids in read_run(run_path).items()
    }
    measures = pytrec_eval.RelevanceEvaluator(qrels, {"success.1,3"}).evaluate(run)
    for depth, ours in ((1, result.top1_hit_rate), (3, result.top3_hit_rate)):
        theirs = sum(m[f"success_{depth}"] for m in measures.values()) / len(golden.questions)
        assert theirs == pytest.approx(ours, abs=1e-9)
    # and back in through run_file, the exported run scores the same
    again = evaluate(golden, RunFileRetriever.from_file(run_path))
    assert (again.top1_hits, again.top3_hits) == (result.top1_hits, result.top3_hits)

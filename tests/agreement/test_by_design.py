"""Where this tool and trec_eval / ranx differ ON PURPOSE, shown on the smallest inputs.

- Duplicate ids in a ranking: this tool keeps the FIRST occurrence (a chunked retriever's best
  chunk stands for its document); trec_eval and ranx hold a run as ``{docid: score}``, so a
  repeated id keeps its LAST line (pytrec_eval's own parser refuses the file outright).
- No-result questions (no expected documents): this tool scores them (a hit when nothing comes
  back); pytrec_eval leaves such a query out of its output and ranx scores it 0.
- Cranfield's -1 code: the importer's rule (relevance >= 1) leaves it out, as trec_eval's
  relevance level does; counting every qrels line as a target inflates top-1 a great deal.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.evaluation import metrics
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import import_beir, read_qrels
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.run_file import RunFileRetriever

from .ir_tools import pytrec_per_query
from .ranx_figures import DUPLICATE_QRELS, DUPLICATE_RUN, NO_RESULT_QRELS, stored


def golden(*questions: GoldenQuestion) -> GoldenQuestionSet:
    return GoldenQuestionSet(identifier="t.design", questions=list(questions))


def test_duplicate_ids_first_occurrence_here_last_there(tmp_path: Path) -> None:
    import pytrec_eval

    path = tmp_path / "dup.run"
    path.write_text(DUPLICATE_RUN)
    question = GoldenQuestion(id="q1", question="q", form="match", expected_document_ids=["x"])
    result = evaluate(golden(question), RunFileRetriever.from_file(path), RunSettings())
    assert result.questions[0].retrieved == ["x", "a"]
    assert result.metrics["hit_rate@1"] == 1.0 and result.metrics["mrr"] == 1.0

    with path.open() as handle, pytest.raises(AssertionError):
        pytrec_eval.parse_run(handle)  # pytrec_eval's own reader refuses duplicates
    ranx = stored()["duplicate"]  # ranx's figures on DUPLICATE_RUN (test_ranx.py checks them)
    last_wins = ranx["read"]  # ranx's reader keeps the last
    assert last_wins["q1"] == {"x": 1.0, "a": 2.0}
    qrels = DUPLICATE_QRELS
    trec = pytrec_per_query(qrels, last_wins, [1])["q1"]
    assert trec["hit_rate@1"] == 0.0 and trec["mrr"] == 0.5  # x now ranks second
    assert ranx["means"] == {"hit_rate@1": 0.0, "mrr": 0.5}

    first_wins = {"q1": {"x": 3.0, "a": 2.0}}  # deduplicated the way this tool reads it
    assert pytrec_per_query(qrels, first_wins, [1])["q1"]["mrr"] == 1.0


def test_no_result_questions_scored_here_dropped_or_zero_there() -> None:
    from retrieval_eval.retrievers.base import FunctionRetriever

    found = GoldenQuestion(id="q1", question="a", form="match", expected_document_ids=["a"])
    none = GoldenQuestion(id="q0", question="nothing", form="gap", expected_document_ids=[])
    rankings = {"a": ["a"], "nothing": []}
    result = evaluate(
        golden(found, none),
        FunctionRetriever(lambda text, limit: rankings[text], identifier="table"),
        RunSettings(),
    )
    assert result.top1_hit_rate == result.metrics["hit_rate@1"] == 1.0  # both questions hit
    assert metrics.per_question(result.questions, [1]).loc["q0", "mrr"] != 0  # NaN: not counted
    assert result.metrics["mrr"] == 1.0  # the mean is over q1 alone

    qrels = NO_RESULT_QRELS
    run = {"q1": {"a": 1.0}, "q0": {}}
    assert set(pytrec_per_query(qrels, run, [1])) == {"q1"}  # q0 is not in pytrec_eval's output
    ranx = stored()["no_result"]["means"]  # on NO_RESULT_RUN (test_ranx.py checks them)
    assert ranx == {"hit_rate@1": 0.5}  # ranx scores q0 as 0


def test_cranfield_minus_one_is_not_a_target() -> None:
    root = shared_collection("cranfield")
    all_codes = root / "qrels" / "test_all_codes.tsv"
    if not all_codes.is_file():
        pytest.skip(f"{all_codes} is absent")
    raw = read_qrels(all_codes)
    assert any(rel < 1 for docs in raw.values() for rel in docs.values())
    golden_set = import_beir(root, "test_all_codes")
    for question in golden_set.questions:
        assert all(raw[question.id][doc] >= 1 for doc in question.expected_document_ids)
    result = evaluate(
        golden_set, RunFileRetriever.from_file(root / "runs" / "bm25s.run"), RunSettings()
    )
    run = {qid: {doc: 1.0 / rank for rank, doc in enumerate(ids, 1)} for qid, ids in
           RunFileRetriever.from_file(root / "runs" / "bm25s.run").rankings.items()}  # fmt: skip
    every_line = {qid: dict.fromkeys(docs, 1) for qid, docs in raw.items()}
    naive = pytrec_per_query(every_line, run, [1])
    naive_top1 = sum(v["hit_rate@1"] for v in naive.values()) / len(naive)
    assert result.top1_hit_rate is not None
    assert naive_top1 > result.top1_hit_rate + 0.2  # the -1 document is often ranked first

"""The scorer against an outside reference: SciFact's bm25s run, through a plain function.

trec_eval's success@1 / success@3 on ``runs/bm25s.run`` over the 300 test queries are 0.5500 and
0.7267 (``runs/metrics.json``; pytrec_eval, ir_measures and ranx agree). A plain
``f(question, limit)`` that looks the question text up in the run file must give the same
top-1 / top-3 hit rates: that checks overfetch, collapsing and hit judgement end to end.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever


def read_qrels(path: Path) -> dict[str, set[str]]:
    targets: dict[str, set[str]] = defaultdict(set)
    for line in path.read_text().splitlines()[1:]:  # header: query-id corpus-id score
        qid, doc_id, score = line.split("\t")
        if int(score) >= 1:
            targets[qid].add(doc_id)
    return targets


def read_run(path: Path) -> dict[str, list[str]]:
    """TREC run lines ``qid Q0 docid rank score tag``, each query's ids in rank order."""
    rows: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in path.read_text().splitlines():
        qid, _, doc_id, rank, _score, _tag = line.split()
        rows[qid].append((int(rank), doc_id))
    return {qid: [doc for _, doc in sorted(ranked)] for qid, ranked in rows.items()}


@pytest.fixture(scope="module")
def scifact(
    request: pytest.FixtureRequest,
) -> tuple[GoldenQuestionSet, FunctionRetriever, list[int]]:
    root = shared_collection("scifact")
    texts = {}
    for line in (root / "queries.jsonl").read_text().splitlines():
        row = json.loads(line)
        texts[row["_id"]] = row["text"].strip()
    targets = read_qrels(root / "qrels" / "test.tsv")
    run = read_run(root / "runs" / "bm25s.run")
    qids = sorted(targets, key=int)
    by_text = {texts[qid]: qid for qid in qids}
    assert len(by_text) == len(qids) == 300  # every test query text is unique

    limits: list[int] = []

    def bm25s_run(question: str, limit: int) -> list[str]:
        limits.append(limit)
        return run.get(by_text[question], [])[:limit]

    golden = GoldenQuestionSet(
        identifier="scifact.test",
        questions=tuple(
            GoldenQuestion(
                id=qid,
                question=texts[qid],
                form="match",
                expected_document_ids=tuple(sorted(targets[qid])),
            )
            for qid in qids
        ),
    )
    return golden, FunctionRetriever(bm25s_run, identifier="bm25s.run"), limits


def test_scifact_bm25s_hit_rates_match_trec_eval(
    scifact: tuple[GoldenQuestionSet, FunctionRetriever, list[int]],
) -> None:
    golden, retriever, limits = scifact
    result = evaluate(golden, retriever)
    assert result.question_count == 300 and result.error_count == 0
    assert round(result.top1_hit_rate or 0, 4) == 0.5500
    assert round(result.top3_hit_rate or 0, 4) == 0.7267
    assert (result.top1_hits, result.top3_hits) == (165, 218)
    assert set(limits) == {12}

"""Benchmark 1: scoring 100,000 questions with 12-id rankings, against pytrec_eval and ranx.

Every side starts from the same Python objects (the questions and their rankings) and ends with
the same means: hit rate @1/@3, recall @1/@3, MRR and nDCG @1/@3. Ours is the library's scoring
path, ``score_many`` + ``summarise`` (which adds the by-form / by-class slices and latency
percentiles on top). pytrec_eval's and ranx's times include building the ``{qid: {doc: score}}``
dictionaries they take, since that is the price of using them. ranx is timed after a warm-up
call that JIT-compiles the same metrics. The means are checked equal before any time counts.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from benchmarks.common import Row, best_times, seconds
from benchmarks.synthetic import synthetic
from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import score_many
from retrieval_eval.golden.models import GoldenQuestion

QUESTIONS = 100_000
CUTOFFS = [1, 3]
TREC = {
    "hit_rate@1": "success_1",
    "hit_rate@3": "success_3",
    "recall@1": "recall_1",
    "recall@3": "recall_3",
    "mrr": "recip_rank",
    "ndcg@1": "ndcg_cut_1",
    "ndcg@3": "ndcg_cut_3",
}


def ours(questions: list[GoldenQuestion], rankings: list[list[str]]) -> dict[str, Any]:
    settings = RunSettings(cutoffs=CUTOFFS)
    results = score_many(questions, rankings, depth=settings.depth)
    run = summarise(
        results,
        set_identifier="bench.synthetic",
        labels_fingerprint="-",
        retriever="synthetic",
        settings=settings,
    )
    return dict(run.metrics)


def _dicts(questions: list[GoldenQuestion], rankings: list[list[str]]) -> tuple[dict, dict]:
    qrels = {q.id: dict.fromkeys(q.expected_document_ids, 1) for q in questions}
    run = {
        q.id: {doc: float(len(r) - i) for i, doc in enumerate(r)}
        for q, r in zip(questions, rankings, strict=True)
    }
    return qrels, run


def pytrec(questions: list[GoldenQuestion], rankings: list[list[str]]) -> dict[str, Any]:
    import pytrec_eval

    qrels, run = _dicts(questions, rankings)
    measures = {"success.1,3", "recall.1,3", "recip_rank", "ndcg_cut.1,3"}
    scores = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(run)
    count = len(scores)
    return {
        ours_name: sum(values[theirs] for values in scores.values()) / count
        for ours_name, theirs in TREC.items()
    }


def ranx(questions: list[GoldenQuestion], rankings: list[list[str]]) -> dict[str, Any]:
    from ranx import Qrels, Run, evaluate

    qrels, run = _dicts(questions, rankings)
    return dict(evaluate(Qrels(qrels), Run(run), list(TREC)))


def run() -> list[Row]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ranx: escape sequences, numba cast notices
        import ranx as _ranx  # noqa: F401  (import cost is not scoring cost)

        questions, rankings = synthetic(QUESTIONS)
        warm_q, warm_r = synthetic(200, seed=1)
        ranx(warm_q, warm_r)  # JIT-compile every metric before timing
        expected = ours(questions, rankings)
        for name, tool in (("pytrec_eval", pytrec), ("ranx", ranx)):
            got = tool(questions, rankings)
            for metric, value in expected.items():
                if not math.isclose(value, got[metric], abs_tol=1e-9):
                    raise AssertionError(f"{name} {metric}: {got[metric]} != ours {value}")
        best = best_times(
            {
                "ours": lambda: ours(questions, rankings),
                "pytrec_eval": lambda: pytrec(questions, rankings),
                "ranx": lambda: ranx(questions, rankings),
            },
            repeat=3,
            budget_s=120,
        )
    rows = []
    for other in ("pytrec_eval", "ranx"):
        ratio = best["ours"] / best[other]
        rows.append(
            Row(
                benchmark=f"1. scoring 100k questions vs {other}",
                ours=seconds(best["ours"]),
                reference=seconds(best[other]),
                ratio=ratio,
                target="< 1.00 (faster)",
                met=ratio < 1.0,
                note=(
                    f"{QUESTIONS / best['ours']:,.0f} questions/s; same 7 means to 1e-9"
                    if other == "pytrec_eval"
                    else "ranx timed after JIT warm-up; includes its Qrels/Run conversion"
                ),
            )
        )
    return rows

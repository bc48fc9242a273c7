"""pytrec_eval and ranx, called the way their users call them, for the agreement tests.

Both take qrels ``{qid: {docid: relevance}}`` and a run ``{qid: {docid: score}}`` and rank each
query's documents by score themselves. Our measure names map to theirs here, once.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterable, Mapping

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]


def trec_measures(cutoffs: Iterable[int]) -> dict[str, str]:
    """Our metric name -> pytrec_eval's (trec_eval's) result key."""
    out = {}
    for k in cutoffs:
        out[f"hit_rate@{k}"] = f"success_{k}"
        out[f"recall@{k}"] = f"recall_{k}"
        out[f"ndcg@{k}"] = f"ndcg_cut_{k}"
    out["mrr"] = "recip_rank"
    return out


def pytrec_per_query(qrels: Qrels, run: Run, cutoffs: Iterable[int]) -> dict[str, dict[str, float]]:
    """trec_eval's per-query values, keyed by OUR metric names."""
    import pytrec_eval

    ks = ",".join(str(k) for k in sorted(set(cutoffs)))
    measures = {f"success.{ks}", f"recall.{ks}", f"ndcg_cut.{ks}", "recip_rank"}
    names = trec_measures(cutoffs)
    evaluator = pytrec_eval.RelevanceEvaluator({q: dict(d) for q, d in qrels.items()}, measures)
    scores = evaluator.evaluate({q: dict(d) for q, d in run.items()})
    return {
        qid: {ours: values[theirs] for ours, theirs in names.items()}
        for qid, values in scores.items()
    }


def ranx_means(qrels: Qrels, run: Run, metric_names: Iterable[str]) -> dict[str, float]:
    """ranx's means over the qrels' queries (a query missing from the run scores 0)."""
    names = list(metric_names)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ranx's escape sequences, numba's int64 cast notices
        from ranx import Qrels as RanxQrels
        from ranx import Run as RanxRun
        from ranx import evaluate

        result = evaluate(
            RanxQrels({q: dict(d) for q, d in qrels.items()}),
            RanxRun({q: dict(d) for q, d in run.items()}),
            names,
            make_comparable=True,
        )
    if not isinstance(result, dict):  # ranx returns a bare float for a single metric
        return {names[0]: float(result)}
    return {name: float(value) for name, value in result.items()}


def ranx_read_run(path: str) -> dict[str, dict[str, float]]:
    """A TREC run through ranx's own reader."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from ranx import Run as RanxRun

        return {q: dict(d) for q, d in RanxRun.from_file(path, kind="trec").to_dict().items()}


def binary(qrels: Qrels, min_relevance: int = 1) -> dict[str, dict[str, int]]:
    """The targets as binary qrels: the importer's rule (relevance >= 1), every gain 1."""
    out = {
        qid: {doc: 1 for doc, rel in docs.items() if rel >= min_relevance}
        for qid, docs in qrels.items()
    }
    return {qid: docs for qid, docs in out.items() if docs}

"""pytrec_eval, called the way its users call it, and the reference cases of the agreement tests.

pytrec_eval takes qrels ``{qid: {docid: relevance}}`` and a run ``{qid: {docid: score}}`` and
ranks each query's documents by score itself. Our measure names map to its names here, once.
ranx's figures come from ``ranx_figures.py`` (stored; one ranx call computes them all).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from helpers import shared_data

from retrieval_eval.golden.models import GoldenQuestionSet

Qrels = Mapping[str, Mapping[str, int]]
Run = Mapping[str, Mapping[str, float]]
Case = tuple[str, str, str]  # (collection, qrels split, run name)
CUTOFFS = [1, 3, 10, 100]  # fetch 400 ids: deeper than the runs, so MRR sees every line


def reference_cases() -> list[Case]:
    """Every ``<collection>/runs/*.run`` of the shared data with every ``qrels/test*.tsv``."""
    cases = []
    for run in sorted(shared_data().glob("*/runs/*.run")):
        collection = run.parent.parent
        for qrels in sorted((collection / "qrels").glob("test*.tsv")):
            cases.append((collection.name, qrels.stem, run.stem))
    return cases


def case_id(case: Case) -> str:
    return "/".join(case)


def metric_names(cutoffs: Iterable[int]) -> list[str]:
    """This tool's metric names, which are ranx's too."""
    ks = sorted(set(cutoffs))
    return [f"{m}@{k}" for m in ("hit_rate", "recall", "ndcg") for k in ks] + ["mrr"]


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


def graded(golden: GoldenQuestionSet) -> dict[str, dict[str, int]]:
    """The set's judged grades as qrels (what the importer kept: every judgment, its code as its
    grade, 0 below the relevance floor), the gains this tool's nDCG uses."""
    return {q.id: dict(q.relevance) for q in golden.questions}

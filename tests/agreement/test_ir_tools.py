"""This tool's metrics against pytrec_eval and ranx on the shared collections' reference runs.

For every ``<collection>/runs/*.run`` of the shared data (``$RETRIEVAL_EVAL_DATA``, default
``../shared/data``) and every ``qrels/test*.tsv`` split beside it, the run goes through the
``run_file`` adapter and the real scorer, the targets through the BEIR importer (relevance >= 1:
Cranfield's -1 code is not a target), and pytrec_eval scores the same qrels and run in the same
test; ranx's means are its stored figures (``ranx_figures.py``: ``test_ranx.py`` checks them
against ranx itself). Everything agrees to 1e-9, per question and in the means. nDCG is
compared on the grades the importer kept (gain = grade = the qrels' code, trec_eval's
convention); the by-design differences themselves are in ``test_by_design.py``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.evaluation import metrics
from retrieval_eval.evaluation.results import RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import import_beir, read_qrels
from retrieval_eval.retrievers.run_file import RunFileRetriever, read_run

from .ir_tools import CUTOFFS, case_id, graded, pytrec_per_query, reference_cases
from .ranx_figures import stored_case

TOLERANCE = 1e-9
# absent data: one case that skips (or fails, when data is required) inside the test
CASES = reference_cases() or [("scifact", "test", "bm25s")]


def trec_run(path: Path) -> dict[str, dict[str, float]]:
    """The run as pytrec_eval reads it (its own parser: it refuses duplicate ids)."""
    import pytrec_eval

    with path.open() as handle:
        return dict(pytrec_eval.parse_run(handle))


def score(root: Path, split: str, run: str, cutoffs: list[int], level: int = 1) -> RunResult:
    golden = import_beir(root, split)
    retriever = RunFileRetriever.from_file(root / "runs" / f"{run}.run")
    settings = RunSettings(cutoffs=cutoffs, timeout_s=None, relevance_level=level)
    return evaluate(golden, retriever, settings)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_metrics_agree_with_pytrec_eval_and_ranx(case: tuple[str, str, str]) -> None:
    name, split, run_name = case
    root = shared_collection(name)
    result = score(root, split, run_name, CUTOFFS)
    ids = [q.id for q in result.questions]
    raw = read_qrels(root / "qrels" / f"{split}.tsv")
    qrels = {qid: raw[qid] for qid in ids}  # raw relevances: -1 and 0 included
    run = trec_run(root / "runs" / f"{run_name}.run")
    assert max(len(docs) for docs in run.values()) <= result.settings.fetch_limit

    # binary measures on the raw qrels (trec_eval and ranx count relevance >= 1 as relevant);
    # nDCG on the grades the importer kept, the gains this tool uses
    theirs = pytrec_per_query(qrels, run, CUTOFFS)
    theirs_ndcg = pytrec_per_query(graded(import_beir(root, split)), run, CUTOFFS)
    assert set(theirs) == set(ids)  # every question has run lines: the means are comparable
    ours = metrics.per_question(result.questions, CUTOFFS)
    mismatches = []
    for qid in ids:
        for metric in ours.columns:
            expected = (theirs_ndcg if metric.startswith("ndcg") else theirs)[qid][metric]
            if not math.isclose(ours.loc[qid, metric], expected, rel_tol=0, abs_tol=TOLERANCE):
                mismatches.append((qid, metric, ours.loc[qid, metric], expected))
    assert not mismatches, mismatches[:10]

    ranx = stored_case(case)
    for metric, value in result.metrics.items():
        assert value is not None
        trec_mean = sum(
            (theirs_ndcg if metric.startswith("ndcg") else theirs)[qid][metric] for qid in ids
        ) / len(ids)
        assert value == pytest.approx(trec_mean, rel=0, abs=TOLERANCE), metric
        assert value == pytest.approx(ranx[metric], rel=0, abs=TOLERANCE), metric
    assert result.metrics["hit_rate@1"] == result.top1_hit_rate
    assert result.metrics["hit_rate@3"] == result.top3_hit_rate


@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "test"], ids=case_id)
def test_metrics_match_the_published_metrics_json(case: tuple[str, str, str]) -> None:
    """``runs/metrics.json`` (pytrec_eval, ir_measures, ranx; 6 decimals) on ``qrels/test.tsv``."""
    name, split, run_name = case
    root = shared_collection(name)
    published_file = root / "runs" / "metrics.json"
    if not published_file.is_file():
        pytest.skip(f"{published_file} is absent")
    published = json.loads(published_file.read_text())["metrics"][f"{run_name}.run"]["pytrec_eval"]
    result = score(root, split, run_name, CUTOFFS)
    same = {
        "Success@1": "hit_rate@1",
        "Success@3": "hit_rate@3",
        "MRR(RR)": "mrr",
        "Recall@100": "recall@100",
        "nDCG@10": "ndcg@10",  # Cranfield's codes 1-4 are the gains, here as there
    }
    assert published["queries_evaluated"] == result.question_count
    for theirs, ours in same.items():
        assert result.metrics[ours] == pytest.approx(published[theirs], abs=5e-7), (theirs, ours)


@pytest.mark.parametrize("case", [c for c in CASES if c[1] == "test"], ids=case_id)
def test_mrr_sees_only_the_fetched_depth(case: tuple[str, str, str]) -> None:
    """Default cutoffs fetch 12 ids: MRR equals trec_eval's on the run cut to those 12."""
    name, split, run_name = case
    root = shared_collection(name)
    result = score(root, split, run_name, [1, 3])
    assert result.settings.fetch_limit == 12
    ids = [q.id for q in result.questions]
    full = trec_run(root / "runs" / f"{run_name}.run")
    ordered = read_run(root / "runs" / f"{run_name}.run")  # trec_eval's order: score, then id
    cut = {qid: {doc: full[qid][doc] for doc in ordered[qid][:12]} for qid in ids}
    qrels = {qid: read_qrels(root / "qrels" / f"{split}.tsv")[qid] for qid in ids}
    on_cut = pytrec_per_query(qrels, cut, [1])
    on_full = pytrec_per_query(qrels, full, [1])
    mean_cut = sum(on_cut[qid]["mrr"] for qid in ids) / len(ids)
    mean_full = sum(on_full[qid]["mrr"] for qid in ids) / len(ids)
    assert result.metrics["mrr"] == pytest.approx(mean_cut, rel=0, abs=TOLERANCE)
    # some first targets sit below rank 12 in these runs: the whole-run MRR is higher
    assert mean_full > mean_cut

"""Graded labels on Cranfield (codes 1-4, kept as grades 1-4): nDCG takes the grades as gains.

The importer keeps each judgment's code as its grade; scored through the ``run_file`` adapter,
nDCG@10 per question equals pytrec_eval's ``ndcg_cut_10`` on the raw qrels, and its mean the
published 0.337513 and ranx's stored figure (``ranx_figures.py``; ``test_ranx.py`` checks it
against ranx itself), to 1e-9. At relevance level 2 the hit rates count only grade >= 2 targets:
they equal trec_eval's at ``relevance_level=2`` on the questions that have such a target, the
rest are misses; MRR and nDCG equal trec_eval's ``-l 2`` on every question (nDCG, which reads
every grade, does not move).
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
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.retrievers.run_file import RunFileRetriever, read_run

from .ir_tools import graded
from .ranx_figures import stored_case

TOLERANCE = 1e-9
CUTOFFS = [1, 3, 10]
RUN = "bm25s"


@pytest.fixture(scope="module")
def cranfield() -> tuple[GoldenQuestionSet, dict[int, RunResult], dict[str, dict[str, float]]]:
    """The imported set, the reference run scored at relevance levels 1 and 2, and the run as
    pytrec_eval reads it."""
    import pytrec_eval

    root = shared_collection("cranfield")
    golden = import_beir(root, "test")
    path = root / "runs" / f"{RUN}.run"
    with path.open() as handle:
        run = dict(pytrec_eval.parse_run(handle))
    results = {
        level: evaluate(
            golden,
            RunFileRetriever.from_file(path),
            RunSettings(cutoffs=CUTOFFS, timeout_s=None, relevance_level=level),
        )
        for level in (1, 2)
    }
    return golden, results, run


def _trec(qrels: dict[str, dict[str, int]], run: dict[str, dict[str, float]], level: int) -> dict:
    import pytrec_eval

    measures = {"success.1,3,10", "ndcg_cut.10", "recip_rank"}
    return pytrec_eval.RelevanceEvaluator(qrels, measures, relevance_level=level).evaluate(run)


def test_the_import_keeps_cranfield_grades(cranfield: tuple) -> None:
    golden, _, _ = cranfield
    grades = [g for q in golden.questions for g in q.relevance.values()]
    assert len(grades) == 1612 and set(grades) == {1, 2, 3, 4}
    raw = read_qrels(shared_collection("cranfield") / "qrels" / "test.tsv")
    assert {q.id: q.relevance for q in golden.questions} == raw  # every code, as trec_eval reads it
    assert (
        golden.fingerprint
        != import_beir(
            shared_collection("cranfield"), "test", grade_map={2: 1, 3: 1, 4: 1}
        ).fingerprint
    )  # the grades are in the fingerprint


def test_graded_ndcg_at_10_is_trec_evals_0_337513(cranfield: tuple) -> None:
    """The figure trec_eval, pytrec_eval, ir_measures and ranx publish for this run
    (``runs/metrics.json``, 6 decimals); with code 4 capped at grade 3 it was 0.350496."""
    _, results, _ = cranfield
    published = json.loads(
        (shared_collection("cranfield") / "runs" / "metrics.json").read_text(encoding="utf-8")
    )["metrics"][f"{RUN}.run"]
    assert {published[tool]["nDCG@10"] for tool in ("pytrec_eval", "ir_measures")} == {0.337513}
    assert round(results[1].metrics["ndcg@10"], 6) == 0.337513


def test_ndcg_at_10_equals_pytrec_eval_and_ranx(cranfield: tuple) -> None:
    golden, results, run = cranfield
    result = results[1]
    theirs = _trec(read_qrels(shared_collection("cranfield") / "qrels" / "test.tsv"), run, 1)
    assert theirs == _trec(graded(golden), run, 1)  # the set holds the qrels' codes
    ours = metrics.per_question(result.questions, CUTOFFS)["ndcg@10"]
    differences = [
        (qid, ours[qid], theirs[qid]["ndcg_cut_10"])
        for qid in ours.index
        if not math.isclose(ours[qid], theirs[qid]["ndcg_cut_10"], rel_tol=0, abs_tol=TOLERANCE)
    ]
    assert not differences, differences[:5]
    mean = result.metrics["ndcg@10"]
    assert mean == pytest.approx(
        math.fsum(v["ndcg_cut_10"] for v in theirs.values()) / len(theirs), rel=0, abs=TOLERANCE
    )
    assert mean == pytest.approx(
        stored_case(("cranfield", "test", RUN))["ndcg@10"], rel=0, abs=TOLERANCE
    )
    # binary gains would give another figure: the grades are what moved it
    binary = {q.id: dict.fromkeys(q.targets(), 1) for q in golden.questions}
    binary_mean = math.fsum(v["ndcg_cut_10"] for v in _trec(binary, run, 1).values()) / len(binary)
    assert abs(mean - binary_mean) > 0.01


def test_hit_rates_at_relevance_level_2(cranfield: tuple) -> None:
    golden, results, run = cranfield
    one, two = results[1], results[2]
    assert two.settings.relevance_level == 2
    assert two.labels_fingerprint != one.labels_fingerprint == golden.fingerprint
    with_targets = {q.id for q in golden.questions if q.targets(2)}
    assert 0 < len(with_targets) < len(golden.questions)
    theirs = _trec(graded(golden), run, 2)
    for q in two.questions:
        if q.id in with_targets:
            assert q.hit_at(1) == bool(theirs[q.id]["success_1"]), q.id
            assert q.hit_at(3) == bool(theirs[q.id]["success_3"]), q.id
        else:  # no target at level 2: scored as a no-result question, a miss (it returned ids)
            assert q.expected_document_ids == () and not q.top3_hit
    assert two.top1_hits < one.top1_hits and two.top3_hits < one.top3_hits
    assert two.metrics["hit_rate@10"] < one.metrics["hit_rate@10"]
    # every question counts in MRR and nDCG, as in trec_eval -l 2 on the ids fetched (-M 40):
    # MRR 0 without a grade-2 target, nDCG (which reads every grade whatever the level) as at 1
    ordered = read_run(shared_collection("cranfield") / "runs" / f"{RUN}.run")
    fetched = two.settings.fetch_limit
    theirs = _trec(
        graded(golden), {q: {d: run[q][d] for d in ordered[q][:fetched]} for q in run}, 2
    )
    ours = metrics.per_question(two.questions, CUTOFFS)
    ndcg_one = metrics.per_question(one.questions, CUTOFFS)["ndcg@10"]
    assert ours["ndcg@10"].notna().all() and (ours["ndcg@10"] == ndcg_one).all()
    differences = [
        (q.id, name, ours.loc[q.id, name], theirs[q.id][key])
        for q in two.questions
        for name, key in (("mrr", "recip_rank"), ("ndcg@10", "ndcg_cut_10"))
        if not math.isclose(ours.loc[q.id, name], theirs[q.id][key], abs_tol=TOLERANCE)
    ]
    assert not differences, differences[:5]
    assert (ours.loc[sorted(set(ours.index) - with_targets), "mrr"] == 0).all()


def test_ranx_jarvelin_case_grades_5_to_2(tmp_path: Path) -> None:
    """ranx's own nDCG test (tests/unit/ranx/metrics_test.py::test_ndcg_jarvelin): judged grades
    5, 4, 3, 2, two rankings; imported from qrels, the codes are the gains, so nDCG@10 equals
    its formula and pytrec_eval's (0.611 and 0.821; with codes capped at 3, 0.599 and 0.922)."""
    import pytrec_eval

    from retrieval_eval.golden.importers import import_trec

    (tmp_path / "t.tsv").write_text("q\tthe question\n")
    (tmp_path / "q.qrels").write_text("q 0 d2 5\nq 0 d4 4\nq 0 d5 3\nq 0 d10 2\n")
    golden = import_trec(tmp_path / "t.tsv", tmp_path / "q.qrels", identifier="jarvelin")
    assert golden.questions[0].relevance == {"d2": 5, "d4": 4, "d5": 3, "d10": 2}
    log3 = math.log2(3)
    ideal = 5 / math.log2(2) + 4 / log3 + 3 / math.log2(4) + 2 / math.log2(5)
    rankings = {  # each ranking and its DCG, as ranx's test writes it
        "first": (["d1", "d2", "d3", "d4", "d5"], 5 / log3 + 4 / math.log2(5) + 3 / math.log2(6)),
        "second": (
            ["d10", "d5", "d2", "d4", "d3"],
            2 + 3 / log3 + 5 / math.log2(4) + 4 / math.log2(5),
        ),
    }
    qrels = {"q": {"d2": 5, "d4": 4, "d5": 3, "d10": 2}}
    figures = {}
    for name, (ranking, dcg) in rankings.items():
        path = tmp_path / f"{name}.run"
        path.write_text("".join(f"q Q0 {d} {i} {10 - i} t\n" for i, d in enumerate(ranking, 1)))
        result = evaluate(golden, RunFileRetriever.from_file(path), RunSettings(cutoffs=[10]))
        ours = result.metrics["ndcg@10"]
        assert ours == pytest.approx(dcg / ideal, rel=0, abs=TOLERANCE), name
        run = {"q": {d: float(10 - i) for i, d in enumerate(ranking, 1)}}
        theirs = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.10"}).evaluate(run)
        assert ours == pytest.approx(theirs["q"]["ndcg_cut_10"], rel=0, abs=TOLERANCE), name
        figures[name] = round(ours, 3)
    assert figures == {"first": 0.611, "second": 0.821}

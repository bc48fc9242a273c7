"""trec_eval's own test folder: every figure this tool computes equals trec_eval's expected output.

The inputs and expected outputs are trec_eval's (``trec_eval/``, see its ``SOURCE.md``): each
case is a command of its ``make quicktest``. Qrels go through the importer's reader and rules
(``read_qrels``, ``build_set``: every judged query is a question, codes are grades), runs through
the ``run_file`` adapter and the real scorer, and every figure this tool computes that the
expected output holds is compared, per query and in the means, at its 4 printed decimals:
``success_k`` / ``hit_rate@k``, ``recall_k`` / ``recall@k``, ``ndcg_cut_k`` / ``ndcg@k``,
``recip_rank`` / ``mrr``, and ``num_q`` / the questions those means are over.

How the options are expressed: ``-c`` (queries absent from the run count) is a set holding every
judged query (the adapter gives an absent one an empty ranking); without it the set holds the
queries of both files, as trec_eval evaluates. ``-M N`` (the first N lines of a query) is the
fetch: an overfetch multiplier of 1 and N the deepest cutoff (1,000 by default, trec_eval's
default). ``-l 2`` is ``relevance_level: 2``. Not expressible: the other measures (P, map, bpref,
...), ``ndcg``'s custom gains (``-mndcg.1=3,2=9,4=4.5``), z-scores and preference formats.
"""

from __future__ import annotations

import gzip
import math
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from retrieval_eval.evaluation import metrics
from retrieval_eval.evaluation.results import RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import build_set, read_qrels
from retrieval_eval.retrievers.run_file import RunFileRetriever, read_run

FOLDER = Path(__file__).with_name("trec_eval")
ALL_TREC = (1, 5, 10, 15, 20, 30, 100, 200, 500, 1000)  # every cutoff of -m all_trec
THEIRS = re.compile(r"^(success|recall|ndcg_cut)_(\d+)$")


@dataclass(frozen=True)
class Case:
    """One ``make quicktest`` command, as this tool's settings."""

    command: str
    qrels: str
    results: str
    expected: str
    complete: bool = False  # -c
    cutoffs: tuple[int, ...] = ALL_TREC  # the deepest is -M (1,000 unless given)
    level: int = 1  # -l


CASES = [
    Case("trec_eval qrels.test results.test", "qrels.test", "results.test", "out.test"),
    Case(
        "trec_eval qrels.test.with-comments results.test",
        "qrels.test.with-comments",
        "results.test",
        "out.test",
    ),
    Case(
        "trec_eval qrels.comment.test results.comment.test",
        "qrels.comment.test.gz",
        "results.comment.test.gz",
        "out.comment.test",
    ),
    Case(
        "trec_eval -m all_trec qrels.test results.test", "qrels.test", "results.test", "out.test.a"
    ),
    Case(
        "trec_eval -m all_trec -q qrels.test results.test",
        "qrels.test",
        "results.test",
        "out.test.aq",
    ),
    Case(
        "trec_eval -m all_trec -q -c qrels.test results.trunc",
        "qrels.test",
        "results.trunc",
        "out.test.aqc",
        complete=True,
    ),
    Case(
        "trec_eval -m all_trec -q -c -M100 qrels.test results.trunc",
        "qrels.test",
        "results.trunc",
        "out.test.aqcM",
        complete=True,
        cutoffs=tuple(k for k in ALL_TREC if k <= 100),
    ),
    Case(
        "trec_eval -m all_trec -mrelstring.20 -q -l2 qrels.rel_level results.test",
        "qrels.rel_level",
        "results.test",
        "out.test.aql",
        level=2,
    ),
    Case(
        "trec_eval -q ... -m recall.20,2000 -mndcg_cut.10,20,23.4 -msuccess.2,5,20 "
        "qrels.test results.test",
        "qrels.test",
        "results.test",
        "out.test.meas_params",
        cutoffs=(2, 5, 10, 20, 23, 2000),  # trec_eval reads the cutoff 23.4 as 23
    ),
]


def _path(name: str, tmp_path: Path) -> Path:
    """A stored input, decompressed into ``tmp_path`` when gzipped (the readers take files)."""
    source = FOLDER / name
    if source.suffix != ".gz":
        return source
    target = tmp_path / source.stem
    with gzip.open(source, "rb") as packed, target.open("wb") as out:
        shutil.copyfileobj(packed, out)
    return target


def _expected(name: str) -> dict[tuple[str, str], str]:
    """trec_eval's output: (measure, query id or ``all``) -> the value as printed."""
    lines = (FOLDER / name).read_text(encoding="utf-8").splitlines()
    return {(m, q): v for m, q, v in (line.split() for line in lines if line.strip())}


def _ours(measure: str, cutoffs: tuple[int, ...]) -> str | None:
    """This tool's name for trec_eval's ``measure``, or None when it computes no such figure."""
    if measure == "recip_rank":
        return "mrr"
    found = THEIRS.match(measure)
    if found is None or int(found[2]) not in cutoffs:
        return None
    kind = {"success": "hit_rate", "recall": "recall", "ndcg_cut": "ndcg"}[found[1]]
    return f"{kind}@{found[2]}"


def _score(case: Case, tmp_path: Path) -> RunResult:
    qrels_path, run_path = _path(case.qrels, tmp_path), _path(case.results, tmp_path)
    qrels = read_qrels(qrels_path)
    in_run = set(read_run(run_path))
    ids = [qid for qid in qrels if case.complete or qid in in_run]
    golden = build_set(
        {qid: {"text": f"topic {qid}"} for qid in ids},
        {qid: qrels[qid] for qid in ids},
        identifier="trec_eval.test",
        name=case.command,
        origin=case.command,
        qrels_source=str(qrels_path),
    )
    settings = RunSettings(
        cutoffs=list(case.cutoffs),
        overfetch_multiplier=1,  # the fetch is the deepest cutoff: trec_eval's -M
        timeout_s=None,
        relevance_level=case.level,
    )
    return evaluate(golden, RunFileRetriever.from_file(run_path), settings)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.expected + ":" + case.qrels)
def test_every_figure_equals_trec_evals_expected_output(case: Case, tmp_path: Path) -> None:
    expected = _expected(case.expected)
    result = _score(case, tmp_path)
    frame = metrics.per_question(result.questions, case.cutoffs)
    means = result.metrics
    ids = [str(qid) for qid in frame.index]
    per_query = any(qid != "all" for _, qid in expected)
    compared, differences = 0, []
    for (measure, qid), value in expected.items():
        name = _ours(measure, case.cutoffs)
        if name is None:
            continue
        ours = means[name] if qid == "all" else frame.loc[qid, name]
        assert ours is not None and not math.isnan(ours), (measure, qid)
        compared += 1
        if f"{ours:.4f}" != value:
            differences.append((measure, qid, f"{ours:.6f}", value))
    assert not differences, differences
    # every figure this tool computes that trec_eval prints was compared: each query, each mean
    measures = {m for m, _ in expected if _ours(m, case.cutoffs)}
    assert compared == len(measures) * ((len(ids) if per_query else 0) + 1)
    # the means are over trec_eval's num_q queries (its -m list may leave num_q out)
    assert expected.get(("num_q", "all"), str(len(ids))) == str(len(ids))
    assert frame["mrr"].notna().sum() == len(ids)


def test_the_comment_case_counts_the_judged_query_without_a_relevant_document(
    tmp_path: Path,
) -> None:
    """trec_eval's comment.test: one of the 31 judged queries has no relevant document; it is
    in the means as 0 (MRR 0.8595), where leaving it out gave 0.8881."""
    result = _score(CASES[2], tmp_path)
    untargeted = [q for q in result.questions if not q.expected_document_ids]
    assert len(result.questions) == 31 and len(untargeted) == 1
    assert f"{result.metrics['mrr']:.4f}" == _expected("out.comment.test")[("recip_rank", "all")]
    reciprocal = metrics.per_question(result.questions, [1])["mrr"]
    assert f"{reciprocal.drop(untargeted[0].id).mean():.4f}" == "0.8881"

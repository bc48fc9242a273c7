"""ranx's figures for the agreement tests: computed in ONE ranx call, stored in ranx_figures.json.

Every case goes into one run file and one qrels, each query id prefixed with its case. The one
test that recomputes them (``test_ranx.py``, marker ``ranx``) runs ranx in a new process with
numba's JIT off (:func:`compute_uncompiled`): ranx's own functions, run as Python, give the
figures the compiled ones stored (every one to 1e-9) without a cold compile of every function
(CI starts with numba's disk cache empty). The other agreement tests read the stored figures.
After the shared data or ranx changes, rewrite the file with
``RETRIEVAL_EVAL_WRITE_RANX=1 pytest -m ranx tests/agreement`` and review its diff.

A case's figure is the mean of ranx's per-query scores over the case's queries (ranx's own mean
over that qrels); the run goes through ranx's own TREC reader.
"""

from __future__ import annotations

import functools
import importlib.metadata
import json
import math
import os
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path
from typing import Any

import pytest
from helpers import shared_collection

from retrieval_eval.golden.importers import import_beir, read_qrels

from .ir_tools import CUTOFFS, Case, Qrels, case_id, graded, metric_names, reference_cases

FIGURES = Path(__file__).with_name("ranx_figures.json")
WRITE_ENV = "RETRIEVAL_EVAL_WRITE_RANX"
SEP = "|"  # between a case and its query id: neither holds it, nor whitespace

# test_by_design.py's inputs. x is the target; it appears first (score 3) and again last (score 1)
DUPLICATE_RUN = "q1 Q0 x 1 3.0 t\nq1 Q0 a 2 2.0 t\nq1 Q0 x 3 1.0 t\n"
DUPLICATE_QRELS = {"q1": {"x": 1}}
# q0 expects nothing and has no run line: ranx gives a query missing from the run no results
NO_RESULT_RUN = "q1 Q0 a 1 1.0 t\n"
NO_RESULT_QRELS: dict[str, dict[str, int]] = {"q1": {"a": 1}, "q0": {}}
BY_DESIGN = {"duplicate": ["hit_rate@1", "mrr"], "no_result": ["hit_rate@1"]}


@functools.cache
def stored() -> dict[str, Any]:
    return dict(json.loads(FIGURES.read_text(encoding="utf-8")))


def stored_case(case: Case) -> dict[str, float]:
    """ranx's means for one reference case; a failure naming the fix where it has none."""
    cases = stored()["cases"]
    if case_id(case) not in cases:
        pytest.fail(
            f"{FIGURES.name} has no ranx figures for {case_id(case)}: rewrite it with "
            f"{WRITE_ENV}=1 pytest -m ranx tests/agreement"
        )
    return dict(cases[case_id(case)])


def compute(cases: list[Case]) -> dict[str, Any]:
    """ranx's figures for ``cases`` and the by-design examples, from one ranx call per qrels."""
    groups: dict[str, list[str]] = {}
    raw: dict[str, dict[str, int]] = {}
    grades: dict[str, dict[str, int]] = {}
    lines: list[str] = []

    def add(group: str, qrels: Qrels, run_text: str, gains: Qrels | None = None) -> None:
        prefixed = {f"{group}{SEP}{qid}": dict(docs) for qid, docs in qrels.items()}
        raw.update(prefixed)
        grades.update({f"{group}{SEP}{qid}": dict(docs) for qid, docs in (gains or qrels).items()})
        groups[group] = list(prefixed)
        lines.extend(f"{group}{SEP}{line}" for line in run_text.splitlines() if line.strip())

    add("duplicate", DUPLICATE_QRELS, DUPLICATE_RUN)
    add("no_result", NO_RESULT_QRELS, NO_RESULT_RUN)
    for case in cases:
        name, split, run_name = case
        root = shared_collection(name)
        golden = import_beir(root, split)
        judged = read_qrels(root / "qrels" / f"{split}.tsv")
        run_text = (root / "runs" / f"{run_name}.run").read_text(encoding="utf-8")
        add(case_id(case), {q.id: judged[q.id] for q in golden.questions}, run_text, graded(golden))

    # binary measures on the raw qrels (ranx counts relevance >= 1 as relevant); nDCG on the
    # grades the importer kept (Cranfield's codes 1-4), the gains this tool uses
    names = metric_names(CUTOFFS)
    per_query: dict[str, dict[str, float]] = {}
    with warnings.catch_warnings(), tempfile.TemporaryDirectory() as folder:
        warnings.simplefilter("ignore")  # ranx's escape sequences, numba's int64 cast notices
        import ranx

        path = Path(folder) / "all.run"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        read: dict[str, dict[str, float]] = {}
        for qrels, measured in (
            (raw, [n for n in names if not n.startswith("ndcg")]),
            (grades, [n for n in names if n.startswith("ndcg")]),
        ):
            # a Run read afresh each time: ranx re-sorts a run it evaluates, and its sort is not
            # stable, so a run evaluated twice may order its ties otherwise the second time
            run = ranx.Run.from_file(str(path), kind="trec")
            read = {qid.split(SEP, 1)[1]: dict(run.run[qid]) for qid in groups["duplicate"]}
            ranx.evaluate(ranx.Qrels(qrels), run, measured, make_comparable=True)
            per_query.update({m: dict(run.scores[m]) for m in measured})

    def means(group: str, measured: list[str]) -> dict[str, float]:
        qids = groups[group]
        return {m: math.fsum(per_query[m][q] for q in qids) / len(qids) for m in measured}

    return {
        "ranx": importlib.metadata.version("ranx"),
        "duplicate": {"read": read, "means": means("duplicate", BY_DESIGN["duplicate"])},
        "no_result": {"means": means("no_result", BY_DESIGN["no_result"])},
        "cases": {case_id(case): means(case_id(case), names) for case in cases},
    }


def compute_uncompiled() -> dict[str, Any]:
    """:func:`compute` over every reference case, in a new process with ``NUMBA_DISABLE_JIT=1``
    (numba reads it at import, so this process's numba, if any, cannot be switched)."""
    done = subprocess.run(
        [sys.executable, "-m", "agreement.ranx_figures"],
        cwd=Path(__file__).resolve().parents[1],
        env={**os.environ, "NUMBA_DISABLE_JIT": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        pytest.fail(f"ranx could not compute the figures:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.splitlines()[-1]))


def write(figures: dict[str, Any]) -> None:
    FIGURES.write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    stored.cache_clear()


if __name__ == "__main__":
    print(json.dumps(compute(reference_cases())))

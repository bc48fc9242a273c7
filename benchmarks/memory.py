"""Benchmark 5: peak memory scoring a 100,000-question set, in a fresh process.

The child builds the set (a validated ``GoldenQuestionSet``) and a 12-id ranking per question,
then runs the library's whole path for precomputed rankings: ``evaluate`` with the ``run_file``
retriever (no per-question timeout thread), aggregation and secondary metrics included. It
reports its peak resident set (``VmHWM``; ``ru_maxrss`` where there is no /proc) and its resident
set right after the imports.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys

from benchmarks.common import ROOT, Row, proc_status

QUESTIONS = 100_000
LIMIT_BYTES = 1 << 30


def child() -> None:
    from benchmarks.synthetic import synthetic
    from retrieval_eval.evaluation.results import RunSettings
    from retrieval_eval.evaluation.scoring import evaluate
    from retrieval_eval.golden.models import GoldenQuestionSet
    from retrieval_eval.retrievers.run_file import RunFileRetriever

    baseline = proc_status("VmRSS")
    questions, rankings = synthetic(QUESTIONS)
    golden = GoldenQuestionSet(identifier="bench.memory", questions=questions)
    retriever = RunFileRetriever(
        "synthetic", {q.id: r for q, r in zip(questions, rankings, strict=True)}
    )
    del questions, rankings
    result = evaluate(golden, retriever, RunSettings(timeout_s=None))
    assert result.question_count == QUESTIONS
    # ru_maxrss survives fork + exec on Linux: a child of the big benchmark process starts with
    # the parent's peak. VmHWM belongs to the child's own address space; both are printed.
    maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    peak = proc_status("VmHWM") or maxrss
    print(json.dumps({"baseline": baseline, "peak": peak, "ru_maxrss": maxrss}))


def run() -> list[Row]:
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=True,
    )
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    peak, baseline = figures["peak"], figures["baseline"]
    return [
        Row(
            "5. peak RSS scoring 100k questions",
            f"{peak / 2**20:,.0f} MiB",
            "1,024 MiB",
            peak / LIMIT_BYTES,
            "< 1.00",
            peak < LIMIT_BYTES,
            f"{baseline / 2**20:,.0f} MiB of it is the interpreter and imports",
        )
    ]


if __name__ == "__main__" and sys.argv[1:] == ["--child"]:
    child()

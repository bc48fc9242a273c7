"""``python -m benchmarks [NAME ...]`` (``make bench``): every benchmark, one table of ratios.

Names: scoring, harness, concurrency, airflow, memory, parse, deployment, cli, lint, replay,
run_page, vector_stores (default: all but vector_stores, in that order; it needs torch and the store
extras); ``dagrun`` is the LocalExecutor half of ``deployment`` alone. A benchmark
that cannot run (missing data, an exception) gets a row saying so; the others still run. Exit
code 1 only when a benchmark broke; a missed target is a figure (the table says MISSED).
"""

from __future__ import annotations

import importlib
import sys
import time

from benchmarks.common import Row, compile_package, machine, render

BENCHMARKS = {
    "scoring": "benchmarks.scoring_throughput",
    "harness": "benchmarks.harness_overhead",
    "concurrency": "benchmarks.concurrency",
    "airflow": "benchmarks.airflow_dag",
    "memory": "benchmarks.memory",
    "parse": "benchmarks.dag_parse",
    "deployment": "benchmarks.airflow_deployment",
    "cli": "benchmarks.cli_startup",
    "lint": "benchmarks.lint",
    "replay": "benchmarks.replay",
    "run_page": "benchmarks.run_page",
    "vector_stores": "benchmarks.vector_stores",
}
# not in the default list: a part of one above, named ``module:function``
PARTS = {"dagrun": "benchmarks.airflow_deployment:run_local"}

# run only when named: SciFact embedded with a real model, and every store's extra
OPT_IN = {"vector_stores"}


def main(argv: list[str]) -> int:
    names = argv or [name for name in BENCHMARKS if name not in OPT_IN]
    known = BENCHMARKS | PARTS
    unknown = [name for name in names if name not in known]
    if unknown:
        print(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(known)}")
        return 2
    compile_package()
    rows: list[Row] = []
    broken = 0
    started = time.perf_counter()
    for name in names:
        print(f"running {name} ...", file=sys.stderr, flush=True)
        try:
            module, _, function = known[name].partition(":")
            rows += getattr(importlib.import_module(module), function or "run")()
        except Exception as exc:  # one broken benchmark must not hide the others' figures
            broken += 1
            rows.append(Row(name, "–", "–", None, "–", None, f"{type(exc).__name__}: {exc}"))
    print(f"Machine: {machine()}")
    print(render(rows))
    print(f"\n{len(names)} benchmark(s) in {time.perf_counter() - started:.0f} s")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Benchmark 6: parsing the DAG file against a do-nothing DAG file of the same shape.

Every Airflow task process parses the DAG file before it runs, and so does the dag-processor at
each pass: what parsing costs, every mapped task pays.

- **Parse vs the same shape** (target ≤ 1.3×): a fresh process imports Airflow's SDK, then
  executes the DAG file, timed; the reference is :mod:`benchmarks.noop_dag`'s do-nothing file
  with the demo's schedule (cron or asset), tasks, mapping and Params, so what is left is this
  package's imports and its config reading. Processes for the two files alternate, best of 15.
- **Steady** (information): the file executed again in the same process, the imports paid.
- **Process** (information): ``python -c 'import airflow.sdk'`` + the DAG file against
  ``import airflow.sdk`` alone, with the venv's bytecode state in the note.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Row, seconds
from benchmarks.noop_dag import DEMO_SCHEDULE, noop_dag_file

DAG_FILE = Path(ROOT) / "dags" / "retrieval_eval_dags.py"
DEMO_CONFIG = Path(ROOT) / "examples" / "retrieval_eval.yaml"
TARGET = 1.3
ROUNDS = 15

PARSE_PROBE = """
import runpy, sys, time
import airflow.sdk
times = []
for round in range(8):
    t0 = time.perf_counter()
    runpy.run_path(sys.argv[1])
    times.append(time.perf_counter() - t0)
print(times[0], min(times[1:]))
"""


def _process(command: list[str], env: dict[str, str], repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t0 = time.perf_counter()
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        best = min(best, time.perf_counter() - t0)
        if done.returncode != 0:
            raise RuntimeError(
                f"{' '.join(command[:3])} exited {done.returncode}: {done.stderr[-800:]}"
            )
    return best


def _bytecode() -> str:
    import pandas

    folders = [Path(pandas.__file__).parent, Path(ROOT) / "retrieval_eval" / "config"]
    cached = [folder / "__pycache__" for folder in folders]
    compiled = all(folder.is_dir() and any(folder.iterdir()) for folder in cached)
    return "compiled (venv and package)" if compiled else "NOT compiled"


def run() -> list[Row]:
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        env = {
            **os.environ,
            "AIRFLOW_HOME": str(home / "airflow"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "RETRIEVAL_EVAL_CONFIG": str(DEMO_CONFIG),
            "RETRIEVAL_EVAL_HOME": str(home / "re"),
        }
        noop = home / "noop_dag.py"
        noop.write_text(
            noop_dag_file([("retrieval_eval__noop", 4)], DEMO_SCHEDULE), encoding="utf-8"
        )
        first = {noop: float("inf"), DAG_FILE: float("inf")}
        steady = dict(first)
        for _ in range(ROUNDS):
            for file in first:
                done = subprocess.run(
                    [sys.executable, "-c", PARSE_PROBE, str(file)],
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=300,
                )
                if done.returncode != 0:
                    raise RuntimeError(done.stderr[-1500:])
                cold, warm = map(float, done.stdout.split()[-2:])
                first[file], steady[file] = min(first[file], cold), min(steady[file], warm)
        sdk = _process([sys.executable, "-c", "import airflow.sdk"], env)
        parse = _process(
            [sys.executable, "-c", f"import airflow.sdk, runpy; runpy.run_path({str(DAG_FILE)!r})"],
            env,
        )
    state = f"bytecode {_bytecode()}, PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')}"
    ratio = first[DAG_FILE] / first[noop]
    return [
        Row(
            "6. DAG file parse vs do-nothing DAG, same shape",
            seconds(first[DAG_FILE]),
            seconds(first[noop]),
            ratio,
            f"≤ {TARGET:.2f}",
            ratio <= TARGET,
            f"first execution in a fresh process after import airflow.sdk, best of {ROUNDS} "
            "processes; same schedule, 9 tasks, mapping, 7 Params",
        ),
        Row(
            "6. DAG file parse, steady, vs same shape",
            seconds(steady[DAG_FILE]),
            seconds(steady[noop]),
            steady[DAG_FILE] / steady[noop],
            "info",
            None,
            "the file executed again in the same process: imports already paid",
        ),
        Row(
            "6. process: import airflow.sdk + DAG file",
            seconds(parse),
            seconds(sdk),
            parse / sdk,
            "info",
            None,
            f"vs import airflow.sdk alone; {state}",
        ),
    ]


if __name__ == "__main__":
    from benchmarks.common import machine, render

    print(f"Machine: {machine()}")
    print(render(run()))

"""Run one DAG in-process with ``dag.test()`` and print its outcome: ``make demo`` and the tests.

Usage: ``python -m retrieval_eval.airflow.testrun DAG_ID [RUN_CONF_JSON] [--log FILE]``.
The last stdout line is a JSON object ``{"state", "tasks": {task_id[map_index]: state}, "run_id"}``;
with ``--log`` Airflow's own output goes to FILE and a one-line summary is printed instead.
Exit code 0 when the DAG run succeeded, 1 otherwise (as ``airflow dags test``).

``--plan FILE`` runs several DAG runs in this one process (Airflow's imports and start-up paid
once): FILE is a JSON list of ``{"dag_id", "conf", "env"}``, ``env`` setting (or, with null,
unsetting) environment variables before that run; the last stdout line is the JSON list of
outcomes. The tests use it to run a whole scenario in one subprocess.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Iterator
from typing import Any


def run(dag_id: str, run_conf: dict[str, Any] | None = None) -> dict[str, Any]:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import conf

    bag = DagBag(dag_folder=conf.get("core", "dags_folder"))
    if bag.import_errors:
        return {"state": "import_error", "tasks": {}, "import_errors": bag.import_errors}
    if dag_id not in bag.dags:
        return {"state": "unknown_dag", "tasks": {}, "dags": sorted(bag.dags)}
    dag_run = bag.dags[dag_id].test(run_conf=run_conf)
    states: dict[str, str | None] = {}
    for ti in dag_run.get_task_instances():
        key = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
        states[key] = None if ti.state is None else str(ti.state)
    return {"state": str(dag_run.state), "tasks": states, "run_id": dag_run.run_id}


@contextlib.contextmanager
def _output_to(path: str) -> Iterator[None]:
    """Point file descriptors 1 and 2 at ``path`` (Airflow's loggers hold the original streams)."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    with open(path, "w", encoding="utf-8") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])


def run_plan(plan: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each planned run in turn, its environment applied first (the DAG folder re-parsed)."""
    outcomes = []
    for step in plan:
        for name, value in (step.get("env") or {}).items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        outcomes.append(run(step["dag_id"], step.get("conf") or {}))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dag_id", nargs="?")
    parser.add_argument("run_conf", nargs="?", default="{}")
    parser.add_argument("--log", help="send Airflow's output to this file")
    parser.add_argument("--plan", help="a JSON file listing several runs (see above)")
    args = parser.parse_args(argv)
    if args.plan:
        with open(args.plan, encoding="utf-8") as handle:
            outcomes = run_plan(json.load(handle))
        print(json.dumps(outcomes))
        return 0 if all(o["state"] == "success" for o in outcomes) else 1
    if not args.dag_id:
        parser.error("give a DAG_ID or --plan FILE")
    if args.log:
        with _output_to(args.log):
            outcome = run(args.dag_id, json.loads(args.run_conf))
        branch = " + ".join(
            t
            for t in ("alert_regression", "alert_invalid_run", "no_regression", "alert_labels")
            if outcome["tasks"].get(t) not in (None, "skipped")
        )
        mapped = sum(1 for t in outcome["tasks"] if t.startswith("retrieve["))
        print(
            f"DAG {args.dag_id}: run {outcome['state']}; {mapped} retrieve batches; "
            f"branch taken: {branch or 'none'} (Airflow log: {args.log})"
        )
    else:
        outcome = run(args.dag_id, json.loads(args.run_conf))
        print(json.dumps(outcome))
    return 0 if outcome["state"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())

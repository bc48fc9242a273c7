"""Run one DAG in-process with ``dag.test()`` and print its outcome: ``make demo`` and the tests.

Usage: ``python -m retrieval_eval.airflow.testrun DAG_ID [RUN_CONF_JSON] [--log FILE]``.
The last stdout line is a JSON object ``{"state", "tasks": {task_id[map_index]: state}, "run_id",
"links": {task_id: extra link}}``;
with ``--log`` Airflow's own output goes to FILE and a one-line summary is printed instead.
Exit code 0 when the DAG run succeeded, 1 otherwise (as ``airflow dags test``), 2 for bad usage
or an unreadable plan file.

``--plan FILE`` runs several DAG runs in this one process (Airflow's imports and start-up paid
once): FILE is a JSON list of ``{"dag_id", "conf", "env"}``, ``env`` setting (or, with null,
unsetting) environment variables before that run; the last stdout line is the JSON list of
outcomes. With ``--log`` too, Airflow's output of every run goes to FILE, one summary line per
run is printed, and the JSON list stays the last line. The tests use it to run a whole scenario
in one subprocess.
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
    return {
        "state": str(dag_run.state),
        "tasks": states,
        "run_id": dag_run.run_id,
        "links": extra_links(dag_id, dag_run.run_id),
    }


def extra_links(dag_id: str, run_id: str) -> dict[str, str]:
    """The extra links the run's tasks recorded (``task_id`` -> URL; the persist task's is its
    run page), as Airflow's task runner stored them once each task was done."""
    import json

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    query = select(XComModel.task_id, XComModel.value).where(
        XComModel.dag_id == dag_id, XComModel.run_id == run_id, XComModel.key.like("_link_%")
    )
    with create_session() as session:
        rows = session.execute(query).all()
    found = {}
    for task_id, value in rows:
        try:  # stored as JSON, or as the plain string (as Airflow's XComOperatorLink reads it)
            link = json.loads(value)
        except (TypeError, ValueError):
            link = value
        if link:
            found[task_id] = str(link)
    return found


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


PLAN_HELP = """\
plan file (--plan FILE): a JSON list of runs, done in order in this one process:
  [{"dag_id": "retrieval_eval__handbook_demo__handbook_bm25",
    "conf": {"fail_on_regression": true},
    "env": {"RETRIEVAL_EVAL_CONFIG": "/path/to/config.yaml", "SOME_VAR": null}}]
  dag_id  required; the DAG to run
  conf    optional; the run's conf (params), as RUN_CONF_JSON for one run
  env     optional; environment variables set before this run (null unsets one),
          kept for the runs after it

output: the last stdout line is a JSON outcome {"state", "tasks", "run_id", "links"} (a JSON
list of them with --plan). With --log FILE, Airflow's own output goes to FILE and a one-line summary
per run is printed (with --plan the JSON list still follows as the last line).
exit codes: 0 every run succeeded, 1 a run did not, 2 bad usage or an unreadable plan file.
"""

BRANCHES = ("alert_regression", "alert_invalid_run", "no_regression", "alert_labels")


def summary_line(dag_id: str, outcome: dict[str, Any], log: str) -> str:
    """``DAG d: run success; 4 retrieve batches; branch taken: no_regression; run page:
    /retrieval-eval/runs/2 (Airflow log: f)``."""
    tasks = outcome["tasks"]
    branch = " + ".join(t for t in BRANCHES if tasks.get(t) not in (None, "skipped"))
    mapped = sum(1 for t in tasks if t.startswith("retrieve["))
    page = (outcome.get("links") or {}).get("persist")
    return (
        f"DAG {dag_id}: run {outcome['state']}; {mapped} retrieve batches; "
        f"branch taken: {branch or 'none'}{f'; run page: {page}' if page else ''} "
        f"(Airflow log: {log})"
    )


def read_plan(path: str) -> list[dict[str, Any]]:
    """The plan file's runs; a problem raises ValueError naming the file and the entry."""
    try:
        with open(path, encoding="utf-8") as handle:
            plan = json.load(handle)
    except OSError as exc:
        raise ValueError(f"plan file {path}: cannot be read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise ValueError(
            f"plan file {path}, line {exc.lineno}: not JSON ({exc.msg}); give a JSON list of "
            '{"dag_id", "conf", "env"} objects'
        ) from None
    if not isinstance(plan, list):
        raise ValueError(f'plan file {path}: expected a JSON list of {{"dag_id", ...}} objects')
    for i, step in enumerate(plan):
        if not isinstance(step, dict) or not isinstance(step.get("dag_id"), str):
            raise ValueError(f'plan file {path}, entry {i}: needs a "dag_id" string')
    return plan


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m retrieval_eval.airflow.testrun",
        description=__doc__.split("\n\n", 1)[0],
        epilog=PLAN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("dag_id", nargs="?", help="the DAG to run (not with --plan)")
    parser.add_argument("run_conf", nargs="?", default="{}", help="the run's conf as JSON")
    parser.add_argument("--log", help="send Airflow's output to this file (with --plan too)")
    parser.add_argument("--plan", help="a JSON file listing several runs (format below)")
    args = parser.parse_args(argv)
    if args.plan:
        if args.dag_id:
            parser.error("give either DAG_ID or --plan FILE, not both")
        try:
            plan = read_plan(args.plan)
        except ValueError as exc:
            parser.error(str(exc))
        if args.log:
            with _output_to(args.log):
                outcomes = run_plan(plan)
            for step, outcome in zip(plan, outcomes, strict=True):
                print(summary_line(step["dag_id"], outcome, args.log))
        else:
            outcomes = run_plan(plan)
        print(json.dumps(outcomes))
        return 0 if all(o["state"] == "success" for o in outcomes) else 1
    if not args.dag_id:
        parser.error("give a DAG_ID or --plan FILE")
    if args.log:
        with _output_to(args.log):
            outcome = run(args.dag_id, json.loads(args.run_conf))
        print(summary_line(args.dag_id, outcome, args.log))
    else:
        outcome = run(args.dag_id, json.loads(args.run_conf))
        print(json.dumps(outcome))
    return 0 if outcome["state"] == "success" else 1


if __name__ == "__main__":
    sys.exit(main())

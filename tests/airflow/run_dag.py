"""Run one DAG with ``dag.test()`` in this process and print its outcome as JSON (last line).

Used by the Airflow tests in a subprocess, so each run gets a clean Airflow configuration from the
environment (AIRFLOW_HOME, DAGS_FOLDER, RETRIEVAL_EVAL_CONFIG, ...).
Usage: python run_dag.py DAG_ID [RUN_CONF_JSON]
"""

from __future__ import annotations

import json
import sys

from airflow.dag_processing.dagbag import DagBag
from airflow.sdk import conf


def main() -> None:
    dag_id = sys.argv[1]
    run_conf = json.loads(sys.argv[2]) if len(sys.argv) > 2 else None
    bag = DagBag(dag_folder=conf.get("core", "dags_folder"))
    if bag.import_errors:
        print(json.dumps({"import_errors": bag.import_errors}))
        sys.exit(2)
    dag = bag.dags[dag_id]
    dag_run = dag.test(run_conf=run_conf)
    states: dict[str, str | None] = {}
    for ti in dag_run.get_task_instances():
        key = ti.task_id if ti.map_index < 0 else f"{ti.task_id}[{ti.map_index}]"
        states[key] = ti.state
    print(json.dumps({"state": dag_run.state, "tasks": states, "run_id": dag_run.run_id}))


if __name__ == "__main__":
    main()

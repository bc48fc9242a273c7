"""``evaluate_retrieval`` in a team's own DAG: a real ``dag.test()`` of a DAG that builds an
index version, evaluates it as a task group and hands the group's verdict to its own task."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import EXAMPLES, run_plan

pytestmark = pytest.mark.airflow

DAG_FILE = """
import json
from datetime import datetime

from airflow.sdk import DAG, task

from retrieval_eval.airflow import evaluate_retrieval

OUT = {out!r}


@task
def build():
    return "v7"


@task
def gate(outcome):
    with open(OUT, "w") as handle:
        json.dump({{"state": outcome["state"], "run_id": outcome["run_id"],
                   "index_version": outcome["index_version"]}}, handle)


with DAG("team_index_build", schedule=None, start_date=datetime(2024, 1, 1), catchup=False):
    verdict = evaluate_retrieval(
        set="handbook.demo",
        retriever="handbook_bm25",
        index_version="{{{{ ti.xcom_pull(task_ids='build') }}}}",
        group_id="evaluate",
    )
    build() >> verdict.operator.task_group
    gate(verdict)
"""


def test_a_team_dag_evaluates_its_build_and_reads_the_verdict(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    dags, out, store = tmp_path / "dags", tmp_path / "verdict.json", tmp_path / "r.sqlite"
    dags.mkdir()
    (dags / "team.py").write_text(DAG_FILE.format(out=str(out)), encoding="utf-8")
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": f"sqlite:///{store}",
                "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
                "retrievers": {
                    "handbook_bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}
                },
            }
        ),
        encoding="utf-8",
    )
    env = {
        **airflow_env,
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        # a plan process of its own (one per import path): one that ran another DAGs folder
        # may hold a DAG bag without this DAG
        "PYTHONPATH": os.pathsep.join([str(dags), airflow_env["PYTHONPATH"]]),
        "RETRIEVAL_EVAL_CONFIG": str(config),
    }
    (outcome,), log = run_plan(env, [{"dag_id": "team_index_build"}], tmp_path)
    assert outcome["state"] == "success", log[-3000:]
    tasks: dict[str, Any] = outcome["tasks"]
    assert any(k.startswith("evaluate.retrieve") for k in tasks)
    for step in ("evaluate.load_golden_set", "evaluate.score", "evaluate.persist", "gate"):
        assert tasks[step] == "success", step
    seen = json.loads(out.read_text(encoding="utf-8"))
    with sqlite3.connect(store) as db:
        ((run_id, version, key),) = db.execute(
            "select id, index_version, run_key from eval_result"
        ).fetchall()
    assert seen == {"state": "baseline", "run_id": run_id, "index_version": "v7"}
    assert version == "v7" and key == f"airflow:team_index_build:{outcome['run_id']}#evaluate"
    assert "scored 46 questions of handbook.demo × handbook_bm25 (index v7)" in log

"""Parsing the DAG file is cheap: it happens in the dag-processor and in every task process.

Measured in a fresh interpreter, since a module imported once stays imported. First a trivial
DAG file with the demo's schedule (cron OR an asset) runs, so Airflow has imported what any such
DAG needs (``airflow.sdk`` brings SQLAlchemy and rich; an asset schedule brings Airflow's asset
models); importing ours then adds no pandas, SQLAlchemy, Alembic, rich, numpy or adapter module,
and pandas, Alembic, numpy and bm25s are not imported at all. Its time is a benchmark
(``benchmarks/dag_parse.py``), not a test.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from dag_helpers import ROOT

pytestmark = pytest.mark.airflow

TRIVIAL = """
from datetime import datetime
from airflow.sdk import DAG, Asset, AssetAny, AssetOrTimeSchedule, CronTriggerTimetable, task

@task
def work(item):
    return item

schedule = AssetOrTimeSchedule(
    timetable=CronTriggerTimetable("0 3 * * *", timezone="UTC"),
    assets=AssetAny(Asset("retrieval-index://handbook")),
)
with DAG("trivial", schedule=schedule, start_date=datetime(2024, 1, 1), catchup=False):
    work.expand(item=[1, 2])
"""
PROBE = """
import json, runpy, sys
import airflow.sdk
runpy.run_path(sys.argv[2])
before = set(sys.modules)
runpy.run_path(sys.argv[1])
print(json.dumps({"added": sorted(set(sys.modules) - before), "all": sorted(sys.modules)}))
"""
HEAVY = ("pandas", "sqlalchemy", "alembic", "rich", "numpy", "bm25s", "urllib3", "psycopg")
CORE_AT_RUN_TIME = (
    "retrieval_eval.evaluation.results",
    "retrieval_eval.evaluation.scoring",
    "retrieval_eval.store",
    "retrieval_eval.workflows.recording",
    "retrieval_eval.workflows.labelled_run",
    "retrieval_eval.golden.loaders",
    "retrieval_eval.retrievers.registry",
    "retrieval_eval.workflows.base",
)


def _modules(env: dict[str, str], trivial: Path) -> dict[str, list[str]]:
    trivial.write_text(TRIVIAL, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "dags" / "retrieval_eval_dags.py"), str(trivial)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("configured", [False, True, "approve_baseline"])
def test_the_dag_file_imports_nothing_heavy(
    airflow_env: dict[str, str], configured: bool | str, tmp_path: Path
) -> None:
    env = dict(airflow_env)
    env.pop("RETRIEVAL_EVAL_CONFIG", None)
    if configured:
        env["RETRIEVAL_EVAL_CONFIG"] = str(ROOT / "examples" / "retrieval_eval.yaml")
    if configured == "approve_baseline":  # the demo's evaluation with the approval step
        import yaml

        data = yaml.safe_load((ROOT / "examples" / "retrieval_eval.yaml").read_text())
        data["evaluations"][0]["approve_baseline"] = True
        approving = tmp_path / "approving.yaml"
        approving.write_text(yaml.safe_dump(data))
        env["RETRIEVAL_EVAL_CONFIG"] = str(approving)
    found = _modules(env, tmp_path / "trivial_dag.py")
    added = found["added"]
    assert "retrieval_eval.airflow.factory" in added  # the file did build its DAGs
    # the human-in-the-loop operators only for an evaluation that asks for approval
    assert ("retrieval_eval.airflow.approval" in added) == (configured == "approve_baseline")
    for name in HEAVY:
        assert not any(m == name or m.startswith(name + ".") for m in added), name
    for name in ("pandas", "alembic", "numpy", "bm25s"):
        assert name not in found["all"], name
    for name in CORE_AT_RUN_TIME:
        assert name not in added, name
    adapters = [m for m in added if m.startswith("retrieval_eval.retrievers.")]
    assert adapters == []

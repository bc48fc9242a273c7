"""Airflow test plumbing: configs for one evaluation and DAG runs in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent


def write_config(
    path: Path,
    *,
    store: str,
    retriever: str,
    alerts: list[dict[str, Any]] | None = None,
    golden: Path | None = None,
    airflow: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A config for one evaluation of the demo set (absolute paths, so it lives anywhere)."""
    data: dict[str, Any] = {
        "store": store,
        "sets": [str(golden or EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {
            "handbook_bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")},
        },
        "evaluations": [
            {
                "set": "handbook.demo",
                "retriever": retriever,
                "alerts": alerts or [],
                "max_batches": 2,
                "min_batch_questions": 1,  # the tests fan the demo set out over 2 batches
            }
        ],
        "airflow": {
            "retries": 0,
            "ui_base_url": "http://airflow.example/retrieval-eval",
            **(airflow or {}),
        },
        **(extra or {}),
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def run_dag(
    env: dict[str, str],
    dag_id: str,
    *,
    conf: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``dag.test()`` in a subprocess; return its state and task states (and the log)."""
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_eval.airflow.testrun", dag_id, json.dumps(conf or {})],
        env={**env, **(extra_env or {})},
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    assert lines, (
        f"no outcome from dag.test():\nSTDOUT:\n{proc.stdout[-4000:]}\nSTDERR:\n{proc.stderr[-4000:]}"
    )
    outcome = json.loads(lines[-1])
    outcome["log"] = proc.stdout + proc.stderr
    return outcome


def run_plan(
    env: dict[str, str], plan: list[dict[str, Any]], folder: Path
) -> tuple[list[dict[str, Any]], str]:
    """Several ``dag.test()`` runs in ONE subprocess (Airflow's start-up paid once).

    Each step: ``{"dag_id", "conf", "env"}``. Returns the outcomes and the whole log.
    """
    plan_file = folder / "plan.json"
    plan_file.write_text(json.dumps(plan), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_eval.airflow.testrun", "--plan", str(plan_file)],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("[")]
    assert lines, f"no outcomes:\nSTDOUT:\n{proc.stdout[-4000:]}\nSTDERR:\n{proc.stderr[-4000:]}"
    return json.loads(lines[-1]), proc.stdout + proc.stderr

"""The example index-build DAGs (examples/dags/index_build_gate.py) under ``dag.test()``.

A good build is promoted (the live alias moves to it), a corrupted one is not (the gate skips
the promotion after a stored regression), and the next good one is again. The generated
evaluation DAG emits ``retrieval-eval://<set>/<retriever>`` with the verdict as its ``extra``,
which the promotion DAG's reader takes back from Airflow's own triggering-events accessor.
The asset-triggered chain on a real scheduler: test_deployment.py.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from dag_helpers import EXAMPLES, run_plan

pytestmark = pytest.mark.airflow

FOLDER = EXAMPLES / "dags"
GATED = "demo_index_build_gated"
GROUP = "evaluate__handbook_demo__handbook_candidate"
EVALUATION = "retrieval_eval__handbook_demo__handbook_candidate"
URI = "retrieval-eval://handbook.demo/handbook_candidate"


@pytest.fixture
def example_env(airflow_env: dict[str, str], tmp_path: Path) -> dict[str, str]:
    """The examples' DAGs folder (on the import path too: its tasks import demo_index), a fresh
    home for the store and the index versions."""
    return {
        **airflow_env,
        "AIRFLOW__CORE__DAGS_FOLDER": str(FOLDER),
        "PYTHONPATH": os.pathsep.join([str(FOLDER), airflow_env["PYTHONPATH"]]),
        "RETRIEVAL_EVAL_HOME": str(tmp_path / "home"),
    }


def _live(env: dict[str, str]) -> str | None:
    link = Path(env["RETRIEVAL_EVAL_HOME"]) / "demo-index" / "live"
    return Path(os.readlink(link)).name if link.is_symlink() else None


def _stored(env: dict[str, str]) -> list[tuple[str, str, str]]:
    """(run key, index version, verdict state) of every stored run, oldest first."""
    from retrieval_eval.store import open_store

    url = f"sqlite:///{Path(env['RETRIEVAL_EVAL_HOME']) / 'results.sqlite'}"
    with open_store(url) as store:
        runs = store.history("handbook.demo", "handbook_candidate", questions=False)
    return sorted(
        (r.result.run_key, str(r.result.index_version), str(r.verdict_state)) for r in runs
    )


def test_a_good_build_is_promoted_and_a_corrupted_one_is_not(
    example_env: dict[str, str], tmp_path: Path
) -> None:
    plan: list[dict[str, Any]] = [
        {"dag_id": GATED},
        {"dag_id": GATED, "conf": {"degraded": True}},
        {"dag_id": GATED},
    ]
    (good, bad, again), log = run_plan(example_env, plan, tmp_path)
    # 1. the first build: a baseline, the gate passes, live -> v1
    assert good["state"] == "success", log[-3000:]
    assert good["tasks"][f"{GROUP}.baseline"] == "success"
    assert good["tasks"]["retrieval_gate"] == "success"
    assert good["tasks"]["promote"] == "success"
    # 2. the corrupted build: a regression, alerted inside the group; the gate skips promote
    assert bad["state"] == "success"
    assert bad["tasks"][f"{GROUP}.alert_regression"] == "success"
    assert bad["tasks"]["retrieval_gate"] == "success"
    assert bad["tasks"]["promote"] == "skipped"
    # 3. a good build again: no regression against v1, promoted
    assert again["tasks"][f"{GROUP}.no_regression"] == "success"
    assert again["tasks"]["promote"] == "success"
    assert _live(example_env) == "v3"
    stored = _stored(example_env)
    states = {version: state for _key, version, state in stored}
    assert states == {"v1": "baseline", "v2": "regression", "v3": "no_regression"}
    # a group's run key names its DAG run and its group; the run page link still finds it
    for key, _version, _state in stored:
        assert key.startswith(f"airflow:{GATED}:manual__") and key.endswith(f"#{GROUP}")
    assert "retrieval gate: regression of handbook.demo × handbook_candidate (index v2)" in log
    assert "the tasks after retrieval_gate are skipped" in log
    assert "promoted index v3: live → v3" in log


def test_the_evaluation_dag_emits_its_verdict_and_the_promotion_reads_it(
    example_env: dict[str, str], tmp_path: Path
) -> None:
    """The generated DAG's persist updates the evaluation's asset with the outcome; read back
    through Airflow's accessor, as the promotion DAG's task reads it."""
    from airflow.sdk.execution_time.context import TriggeringAssetEventsAccessor
    from test_index_version import event

    from retrieval_eval.airflow.outcome import outcome_from_events

    plan = [{"dag_id": "demo_index_build"}, {"dag_id": EVALUATION}]
    (build, evaluation), log = run_plan(example_env, plan, tmp_path)
    assert build["state"] == "success" and evaluation["state"] == "success", log[-3000:]
    database = Path(example_env["AIRFLOW_HOME"]) / "airflow.db"
    with sqlite3.connect(database) as db:
        rows = db.execute(
            "select e.extra from asset_event e join asset a on a.id = e.asset_id "
            "where a.uri = ? and e.source_run_id = ?",
            (URI, evaluation["run_id"]),
        ).fetchall()
    (extra,) = [json.loads(row[0]) for row in rows]
    assert extra["state"] == "baseline" and extra["passed"] is True
    assert extra["set"] == "handbook.demo" and extra["retriever"] == "handbook_candidate"
    assert extra["run_key"] == f"airflow:{EVALUATION}:{evaluation['run_id']}"
    assert isinstance(extra["run_id"], int)
    assert extra["run_page"].endswith(f"/retrieval-eval/runs/{extra['run_id']}")
    assert set(extra["hit_rates"]) == {"1", "3"} and 0 < extra["hit_rates"]["1"] <= 1
    assert len(extra["set_fingerprint"]) >= 12
    # dag.test() starts no run from the build's event: no index version named (the deployment
    # test has the whole chain)
    assert extra["index_version"] is None
    outcome = outcome_from_events(TriggeringAssetEventsAccessor.build([event(URI, extra)]))
    assert outcome.passed and outcome.run_id == extra["run_id"]
    with pytest.raises(ValueError, match="retrieval-eval://<set>/<retriever>"):
        outcome_from_events(TriggeringAssetEventsAccessor.build([event(URI, {"x": 1})]))


def test_the_gate_refuses_an_unknown_mode() -> None:
    from retrieval_eval.airflow.gate import retrieval_gate

    with pytest.raises(ValueError, match="give 'skip'"):
        retrieval_gate(None, on_regression="warn")


def test_fail_mode_fails_on_a_regression_or_an_invalid_run_and_passes_the_rest() -> None:
    from airflow.sdk.exceptions import AirflowFailException

    from retrieval_eval.airflow import gate

    verdict = {
        "state": "regression",
        "passed": False,
        "set": "handbook.demo",
        "retriever": "candidate",
        "run_id": 12,
        "run_key": "airflow:d:r#g",
        "index_version": "v2",
        "set_fingerprint": "abc123abc123",
        "hit_rates": {"1": 0.065, "3": 0.326},
        "baseline_hit_rates": {"1": 0.652, "3": 0.804},
        "run_page": "http://airflow.example/retrieval-eval/runs/12",
    }
    with pytest.raises(AirflowFailException, match=r"top-1 65\.2% → 6\.5%.*runs/12"):
        gate._gate.function(verdict, on_regression="fail")
    with pytest.raises(AirflowFailException, match="invalid run"):
        gate._gate.function({**verdict, "state": "invalid_run"}, on_regression="fail")
    passing = {**verdict, "state": "no_regression", "passed": True}
    assert gate._gate.function(passing, on_regression="fail") is True


def test_a_group_run_key_still_names_its_dag_run() -> None:
    from retrieval_eval.reports.links import DagRunRef, dag_run_of

    key = "airflow:index_build:manual__2026-12-04T19:15:16+00:00#evaluate__handbook_demo__c"
    assert dag_run_of(key) == DagRunRef("index_build", "manual__2026-12-04T19:15:16+00:00")

"""Gates set in the config fail scheduled runs after their alert, with no manual-run Param.

One ``dag.test()`` plan (``dag_helpers.run_plan``): a good run (the branch says ``baseline``), a
degraded run under ``fail_on_regression: true`` (the regression alert runs, then the DAG run
fails), a good run again (its ``no_regression`` task sends the one "recovered" that closes the
alerted regression, to a real local HTTP server standing in for Slack), and, on another
evaluation, a first run whose index lost two documents under
``fail_on_dead_labels: true`` (labels alert, the run fails, and it is not accepted as the
baseline: ``dead_labels_baseline`` defaults to ``refuse``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import run_plan, write_config
from slack_server import RecordingServer

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__switchable_retrievers_switchable"
LABELS_DAG = "retrieval_eval__handbook_demo__switchable_retrievers_Shrinking"
DEAD_DOCS = "billing/refunds.md,billing/refunds-eu.md"
RETRIEVER = "switchable_retrievers:switchable"


def _gated(
    path: Path,
    store: str,
    retriever: str,
    alerts: list[dict[str, Any]] | None = None,
    **gates: bool,
) -> Path:
    config = write_config(path, store=store, retriever=retriever, alerts=alerts)
    data = yaml.safe_load(config.read_text())
    data["evaluations"][0].update(gates)
    config.write_text(yaml.safe_dump(data))
    return config


@pytest.fixture(scope="module")
def scenario(
    airflow_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("gates")
    store = f"sqlite:///{folder / 'results.sqlite'}"
    config = _gated(
        folder / "c.yaml",
        store,
        "switchable_retrievers:switchable",
        alerts=[{"type": "slack", "connection_id": "gates_slack", "kinds": ["regression"]}],
        fail_on_regression=True,
    )
    labels = _gated(
        folder / "labels.yaml",
        store,
        "switchable_retrievers:Shrinking",
        fail_on_dead_labels=True,
    )
    with RecordingServer() as slack:
        connection = {
            "conn_type": "slackwebhook",
            "password": "T0/B0/gates",
            "host": f"http://127.0.0.1:{slack.port}",
        }
        evaluation = {"RETRIEVAL_EVAL_CONFIG": str(config)}
        evaluation["AIRFLOW_CONN_GATES_SLACK"] = json.dumps(connection)
        plan = [
            {"dag_id": DAG_ID, "env": {**evaluation, "RE_TEST_MODE": "good"}},
            {"dag_id": DAG_ID, "env": {**evaluation, "RE_TEST_MODE": "degraded"}},
            {"dag_id": DAG_ID, "env": {**evaluation, "RE_TEST_MODE": "good"}},
            {
                "dag_id": LABELS_DAG,
                "env": {"RETRIEVAL_EVAL_CONFIG": str(labels), "RE_DEAD_DOCS": DEAD_DOCS},
            },
        ]
        outcomes, log = run_plan(airflow_env, plan, folder)
    assert len(outcomes) == 4, log[-3000:]
    from retrieval_eval.store import open_store

    with open_store(store) as opened:
        refused = opened.history("handbook.demo", "switchable_retrievers:Shrinking")
    return {
        "first": outcomes[0],
        "degraded": outcomes[1],
        "recovered": outcomes[2],
        "labels": outcomes[3],
        "slack": [request["body"]["text"] for request in slack.requests],
        "log": log,
        "refused": refused,
    }


def test_a_first_run_says_baseline(scenario: dict[str, Any]) -> None:
    first = scenario["first"]
    assert first["state"] == "success", scenario["log"][-3000:]
    assert first["tasks"]["baseline"] == "success"
    assert first["tasks"]["no_regression"] == "skipped"


def test_fail_on_regression_in_the_config_fails_the_run_after_the_alert(
    scenario: dict[str, Any],
) -> None:
    degraded = scenario["degraded"]
    assert degraded["tasks"]["alert_regression"] == "failed"  # the alert ran, then failed
    assert degraded["state"] == "failed"
    assert "fail_on_regression is set" in scenario["log"]
    # the persist and branch logs say the figures and the link in one line each
    assert "; regression; run 2: http://airflow.example/retrieval-eval/runs/2" in scenario["log"]


def test_fail_on_dead_labels_fails_the_run_and_the_run_is_no_baseline(
    scenario: dict[str, Any],
) -> None:
    labels = scenario["labels"]
    assert labels["tasks"]["alert_labels"] == "failed"
    assert labels["tasks"]["baseline"] == "success"
    assert labels["state"] == "failed"
    (run,) = scenario["refused"]
    assert run.verdict is not None and run.verdict.baseline_refused


def test_a_passing_run_after_the_alerted_regression_sends_recovered_once(
    scenario: dict[str, Any],
) -> None:
    """Slack got the regression, then one "Recovered" from the next good run's no_regression
    task (the baseline run before the regression sent nothing)."""
    recovered = scenario["recovered"]
    assert recovered["state"] == "success", scenario["log"][-3000:]
    assert recovered["tasks"]["no_regression"] == "success"
    titles = [text.splitlines()[0] for text in scenario["slack"]]
    assert titles == [
        f"Retrieval regression: handbook.demo × {RETRIEVER}",
        f"Retrieval recovered: handbook.demo × {RETRIEVER}",
    ]
    assert "Run 3 (baseline run 1)" in scenario["slack"][1]

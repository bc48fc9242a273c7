"""Gates set in the config fail scheduled runs after their alert, with no manual-run Param.

One ``dag.test()`` plan (``dag_helpers.run_plan``): a good run (the branch says ``baseline``), a
degraded run under ``fail_on_regression: true`` (the regression alert runs, then the DAG run
fails), and, on another evaluation, a first run whose index lost two documents under
``fail_on_dead_labels: true`` (labels alert, the run fails, and it is not accepted as the
baseline: ``dead_labels_baseline`` defaults to ``refuse``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import run_plan, write_config

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__switchable_retrievers_switchable"
LABELS_DAG = "retrieval_eval__handbook_demo__switchable_retrievers_Shrinking"
DEAD_DOCS = "billing/refunds.md,billing/refunds-eu.md"


def _gated(path: Path, store: str, retriever: str, **gates: bool) -> Path:
    config = write_config(path, store=store, retriever=retriever)
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
        folder / "c.yaml", store, "switchable_retrievers:switchable", fail_on_regression=True
    )
    labels = _gated(
        folder / "labels.yaml",
        store,
        "switchable_retrievers:Shrinking",
        fail_on_dead_labels=True,
    )
    plan = [
        {"dag_id": DAG_ID, "env": {"RETRIEVAL_EVAL_CONFIG": str(config), "RE_TEST_MODE": "good"}},
        {
            "dag_id": DAG_ID,
            "env": {"RETRIEVAL_EVAL_CONFIG": str(config), "RE_TEST_MODE": "degraded"},
        },
        {
            "dag_id": LABELS_DAG,
            "env": {"RETRIEVAL_EVAL_CONFIG": str(labels), "RE_DEAD_DOCS": DEAD_DOCS},
        },
    ]
    outcomes, log = run_plan(airflow_env, plan, folder)
    assert len(outcomes) == 3, log[-3000:]
    from retrieval_eval.store import open_store

    with open_store(store) as opened:
        refused = opened.history("handbook.demo", "switchable_retrievers:Shrinking")
    return {
        "first": outcomes[0],
        "degraded": outcomes[1],
        "labels": outcomes[2],
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

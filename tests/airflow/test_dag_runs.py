"""Real DAG runs with ``dag.test()`` on a temporary AIRFLOW_HOME (SQLite metadata DB).

The whole module's runs happen in ONE subprocess (``testrun --plan``: Airflow's imports and
start-up paid once, about 8 s a run saved); each test then checks its part of the outcome. The
store is SQLite; Slack is a real HTTP server on 127.0.0.1 behind a ``slackwebhook`` connection.
PostgreSQL for the metadata DB and the store (through an Airflow connection) is covered by the
real deployment in ``test_deployment.py``.

The runs, in order: good (baseline), good (no_regression), degraded (regression, one alert),
degraded with ``fail_on_regression`` (alert, then the run fails), broken retriever (invalid run,
alert, run fails), and a bad golden set (``load_golden_set`` fails with every problem).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dag_helpers import run_plan, write_config
from slack_server import RecordingServer

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__switchable_retrievers_switchable"
BM25_DAG = "retrieval_eval__handbook_demo__handbook_bm25"
WEBHOOK_SECRET = "T000/B000/xyzSECRET"


@pytest.fixture(scope="module")
def scenario(
    airflow_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("dag_runs")
    store_url = f"sqlite:///{folder / 'results.sqlite'}"
    config = write_config(
        folder / "config.yaml",
        store=store_url,
        retriever="switchable_retrievers:switchable",
        alerts=[{"type": "slack", "connection_id": "slack_test"}],
    )
    bad = folder / "bad.yaml"
    bad.write_text(
        "identifier: handbook.demo\nquestions:\n"
        "  - {id: q1, question: '  ', form: match, expected_document_ids: [a]}\n"
        "  - {id: q2, question: ok, form: sideways, expected_document_ids: [a]}\n"
    )
    bad_config = write_config(
        folder / "bad_config.yaml",
        store=f"sqlite:///{folder / 'r.sqlite'}",
        retriever="handbook_bm25",
        golden=bad,
        # retries are configured, yet a bad set fails at once: waiting does not fix a file
        airflow={"retries": 2, "retry_delay_s": 300},
    )

    def step(mode: str, conf: dict[str, Any] | None = None) -> dict[str, Any]:
        env = {"RETRIEVAL_EVAL_CONFIG": str(config), "RE_TEST_MODE": mode}
        return {"dag_id": DAG_ID, "conf": conf or {}, "env": env}

    plan = [
        step("good"),
        step("good"),
        step("degraded"),
        step("degraded", {"fail_on_regression": True}),
        step("broken"),
        {"dag_id": BM25_DAG, "env": {"RETRIEVAL_EVAL_CONFIG": str(bad_config)}},
    ]
    with RecordingServer() as slack:
        connection = {
            "conn_type": "slackwebhook",
            "host": f"http://127.0.0.1:{slack.port}",
            "password": WEBHOOK_SECRET,
        }
        env = {**airflow_env, "AIRFLOW_CONN_SLACK_TEST": json.dumps(connection)}
        outcomes, log = run_plan(env, plan, folder)
    names = ["first", "second", "degraded", "failing", "broken", "bad_set"]
    assert len(outcomes) == len(names), log[-3000:]
    return {
        **dict(zip(names, outcomes, strict=True)),
        "log": log,
        "slack": slack.requests,
        "runs": _stored(store_url),
    }


def _stored(store_url: str) -> list[Any]:
    from retrieval_eval.store import open_store

    with open_store(store_url) as store:
        return store.history("handbook.demo", "switchable_retrievers:switchable")


def test_first_runs_set_the_baseline_then_compare(scenario: dict[str, Any]) -> None:
    first, second = scenario["first"], scenario["second"]
    assert first["state"] == "success", scenario["log"][-3000:]
    assert first["tasks"]["no_regression"] == "success"
    assert first["tasks"]["alert_regression"] == "skipped"
    # the set was fanned out over 4 batches, not one task per question
    assert sorted(k for k in first["tasks"] if k.startswith("retrieve")) == [
        f"retrieve[{i}]" for i in range(4)
    ]
    assert second["state"] == "success"
    assert second["tasks"]["no_regression"] == "success"
    runs = list(reversed(scenario["runs"]))  # oldest first
    assert [r.verdict_state for r in runs[:2]] == ["baseline", "no_regression"]
    assert runs[0].result.question_count == 46
    assert runs[0].result.top1_hit_rate == runs[1].result.top1_hit_rate


def test_a_regression_alerts_once_with_the_numbers(scenario: dict[str, Any]) -> None:
    degraded = scenario["degraded"]
    assert degraded["state"] == "success", scenario["log"][-3000:]
    assert degraded["tasks"]["alert_regression"] == "success"
    assert degraded["tasks"]["no_regression"] == "skipped"
    runs = list(reversed(scenario["runs"]))
    baseline, regressed = runs[0], runs[2]
    assert regressed.verdict_state == "regression"
    posted = scenario["slack"][0]
    assert posted["path"] == "/" + WEBHOOK_SECRET
    text = posted["body"]["text"]
    assert "handbook.demo" in text and "switchable_retrievers:switchable" in text
    assert f"Top-1: {baseline.result.top1_hit_rate * 100:.1f}% → 0.0%" in text
    assert f"Top-3: {baseline.result.top3_hit_rate * 100:.1f}% → 0.0%" in text
    assert f"Run {regressed.id}" in text and f"/runs/{regressed.id}" in text
    assert "Now missed at top-1:" in text
    assert posted["body"]["blocks"][0]["type"] == "header"
    # the webhook secret never reaches the task logs
    assert WEBHOOK_SECRET not in scenario["log"]


def test_fail_on_regression_fails_the_run_after_the_alert(scenario: dict[str, Any]) -> None:
    failing = scenario["failing"]
    assert failing["state"] == "failed"
    assert failing["tasks"]["alert_regression"] == "failed"
    assert len(scenario["slack"]) >= 2
    assert "regression" in scenario["slack"][1]["body"]["text"].lower()


def test_an_invalid_run_alerts_and_fails(scenario: dict[str, Any]) -> None:
    broken = scenario["broken"]
    assert broken["tasks"]["alert_invalid_run"] == "failed"  # alert sent, run marked failed
    assert broken["tasks"]["alert_regression"] == "skipped"
    assert broken["state"] == "failed"
    assert len(scenario["slack"]) == 3
    invalid_text = scenario["slack"][2]["body"]["text"]
    assert "could not be trusted" in invalid_text
    assert "46 of 46 questions failed" in invalid_text
    latest = scenario["runs"][0]
    assert latest.status == "invalid" and latest.verdict_state == "invalid_run"


def test_bad_golden_set_fails_load_task_with_the_validation_message(
    scenario: dict[str, Any],
) -> None:
    outcome = scenario["bad_set"]
    assert outcome["state"] == "failed"
    assert outcome["tasks"]["load_golden_set"] == "failed"  # not up_for_retry
    assert "question 'q1' (#1, line 3): field 'question'" in scenario["log"]
    assert "unknown form 'sideways'" in scenario["log"]

"""Real DAG runs with ``dag.test()`` on a temporary AIRFLOW_HOME (SQLite metadata DB).

The whole module's runs are one plan of the test worker's plan process (``dag_helpers.run_plan``:
Airflow's imports and start-up paid once per worker); each test then checks its part of the outcome. The
store is SQLite; Slack is a real HTTP server on 127.0.0.1 behind a ``slackwebhook`` connection.
PostgreSQL for the metadata DB and the store (through an Airflow connection) is covered by the
real deployment in ``test_deployment.py``.

The runs, in order: good (baseline), good (no_regression), degraded (regression, one alert),
degraded with ``fail_on_regression`` (alert, then the run fails), broken retriever (invalid run,
alert, run fails), and a bad golden set (``load_golden_set`` fails with every problem). Then
dead labels (another evaluation, its own Slack webhook): a baseline, the index losing two
documents (the lint task finds them, the verdict leaves the stale questions out, a labels alert
and no regression alert), and the same with ``lint: fail`` (the run fails at the lint task).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from dag_helpers import run_plan, write_config
from slack_server import RecordingServer

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__switchable_retrievers_switchable"
BM25_DAG = "retrieval_eval__handbook_demo__handbook_bm25"
WEBHOOK_SECRET = "T000/B000/xyzSECRET"
LABELS_DAG = "retrieval_eval__handbook_demo__switchable_retrievers_Shrinking"
LABELS_WEBHOOK = "T000/B000/labelsHOOK"
DEAD_DOCS = ["billing/refunds.md", "billing/refunds-eu.md"]
# every target among DEAD_DOCS, in the order of examples/golden/handbook.yaml
STALE = ["refund-eu-monthly", "refund-annual-window", "refund-outside-eu-monthly"]


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

    labels_store = f"sqlite:///{folder / 'labels.sqlite'}"

    def labels_config(name: str, lint: str) -> Path:
        return write_config(
            folder / name,
            store=labels_store,
            retriever="switchable_retrievers:Shrinking",
            alerts=[{"type": "slack", "connection_id": "slack_labels"}],
            extra={"lint": lint},
        )

    def labels_step(config_file: Path, dead: list[str]) -> dict[str, Any]:
        env = {"RETRIEVAL_EVAL_CONFIG": str(config_file), "RE_DEAD_DOCS": ",".join(dead)}
        return {"dag_id": LABELS_DAG, "env": env}

    warn, fail = (
        labels_config("labels_warn.yaml", "warn"),
        labels_config("labels_fail.yaml", "fail"),
    )

    plan = [
        step("good"),
        step("good"),
        step("degraded"),
        step("degraded", {"fail_on_regression": True}),
        step("broken"),
        {"dag_id": BM25_DAG, "env": {"RETRIEVAL_EVAL_CONFIG": str(bad_config)}},
        labels_step(warn, []),
        labels_step(warn, DEAD_DOCS),
        labels_step(fail, DEAD_DOCS),
    ]
    with RecordingServer() as slack:
        connection = {
            "conn_type": "slackwebhook",
            "host": f"http://127.0.0.1:{slack.port}",
            "password": WEBHOOK_SECRET,
        }
        labels_connection = {**connection, "password": LABELS_WEBHOOK}
        env = {
            **airflow_env,
            "AIRFLOW_CONN_SLACK_TEST": json.dumps(connection),
            "AIRFLOW_CONN_SLACK_LABELS": json.dumps(labels_connection),
        }
        outcomes, log = run_plan(env, plan, folder)
    names = ["first", "second", "degraded", "failing", "broken", "bad_set"]
    names += ["labels_base", "labels_dead", "labels_fail"]
    assert len(outcomes) == len(names), log[-3000:]
    return {
        **dict(zip(names, outcomes, strict=True)),
        "log": log,
        "slack": [r for r in slack.requests if r["path"] == "/" + WEBHOOK_SECRET],
        "labels_slack": [r for r in slack.requests if r["path"] == "/" + LABELS_WEBHOOK],
        "runs": _stored(store_url),
        "labels_runs": _stored(labels_store, "switchable_retrievers:Shrinking"),
    }


def _stored(store_url: str, retriever: str = "switchable_retrievers:switchable") -> list[Any]:
    from retrieval_eval.store import open_store

    with open_store(store_url) as store:
        return store.history("handbook.demo", retriever)


def test_first_runs_set_the_baseline_then_compare(scenario: dict[str, Any]) -> None:
    first, second = scenario["first"], scenario["second"]
    assert first["state"] == "success", scenario["log"][-3000:]
    assert first["tasks"]["baseline"] == "success"
    assert first["tasks"]["alert_regression"] == "skipped"
    # the set was fanned out over 2 batches, not one task per question
    assert sorted(k for k in first["tasks"] if k.startswith("retrieve")) == [
        f"retrieve[{i}]" for i in range(2)
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


def test_dead_labels_alert_on_their_own_branch_not_as_a_regression(
    scenario: dict[str, Any],
) -> None:
    base, dead = scenario["labels_base"], scenario["labels_dead"]
    assert base["state"] == "success", scenario["log"][-3000:]
    assert base["tasks"]["alert_labels"] == "skipped"
    assert dead["state"] == "success", scenario["log"][-3000:]
    assert dead["tasks"]["load_golden_set"] == "success"  # lint: warn records, the run goes on
    assert dead["tasks"]["no_regression"] == "success"
    assert dead["tasks"]["alert_labels"] == "success"
    assert dead["tasks"]["alert_regression"] == "skipped"
    stored = list(reversed(scenario["labels_runs"]))  # oldest first
    assert [r.verdict_state for r in stored] == ["baseline", "no_regression"]
    verdict = stored[1].verdict
    assert verdict is not None and verdict.dead_ids == sorted(DEAD_DOCS)
    assert verdict.stale_questions == STALE
    # the stale questions miss now: counted as misses, the overall rate would have dropped
    assert stored[1].result.top1_hits < stored[0].result.top1_hits
    assert stored[1].result.lint is not None and stored[1].result.lint["errors"] >= len(STALE)
    (posted,) = scenario["labels_slack"]  # one alert: the labels one, once
    text = posted["body"]["text"]
    assert text.startswith("Retrieval eval labels need attention")
    assert "Labels need attention: 2 ids no longer in the index" in text
    assert "regression" not in text.splitlines()[0].lower()
    assert f"Run {stored[1].id}" in text


def test_lint_fail_fails_the_run_before_retrieval(scenario: dict[str, Any]) -> None:
    failed = scenario["labels_fail"]
    assert failed["state"] == "failed"
    assert failed["tasks"]["load_golden_set"] == "failed"  # linted there: at once, no retry
    assert failed["tasks"]["score"] == "upstream_failed"
    assert "labels need attention: 2 ids no longer in the index" in scenario["log"]
    assert len(scenario["labels_runs"]) == 2  # nothing stored for the failed run


def test_the_dag_run_points_at_its_run_page(scenario: dict[str, Any]) -> None:
    """The persist task's "Run page" extra link (Airflow lets a task set no DAG-run note) and
    the human lines of persist and check_regression: figures, verdict, link; no dict repr."""
    runs = list(reversed(scenario["runs"]))  # oldest first: first, second, degraded, ...
    base = "http://airflow.example/retrieval-eval/runs"
    for name, stored in (("first", runs[0]), ("degraded", runs[2])):
        assert scenario[name]["links"] == {"persist": f"{base}/{stored.id}"}, name
    assert scenario["bad_set"]["links"] == {}  # nothing was saved, no link
    log = scenario["log"]
    baseline, regressed = runs[0].result, runs[2].result
    line = (
        f"top-1 {baseline.top1_hit_rate * 100:.1f}% → 0.0% "
        f"({-baseline.top1_hit_rate * 100:.1f} pts), top-3 "
    )
    assert line in log
    assert f"regression; run {runs[2].id}: {base}/{runs[2].id}\n" in log  # persist
    assert f"regression; run {runs[2].id}: {base}/{runs[2].id} → alert_regression" in log
    assert regressed.top1_hit_rate == 0.0
    assert f"scored 46 questions of handbook.demo × {regressed.retriever}: top-1 0.0% (0/46)" in log
    assert "{'run_id'" not in log and "{'verdict'" not in log

"""Real DAG runs with ``dag.test()`` on a temporary AIRFLOW_HOME (SQLite metadata DB).

Each run is a subprocess (Airflow configures itself at import). The store is SQLite here and
PostgreSQL in the last test; Slack is a real HTTP server on 127.0.0.1 behind a ``slackwebhook``
connection.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dag_helpers import run_dag, write_config
from slack_server import RecordingServer

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__switchable_retrievers_switchable"
WEBHOOK_SECRET = "T000/B000/xyzSECRET"


def _slack_env(server: RecordingServer) -> dict[str, str]:
    connection = {
        "conn_type": "slackwebhook",
        "host": f"http://127.0.0.1:{server.port}",
        "password": WEBHOOK_SECRET,
    }
    return {"AIRFLOW_CONN_SLACK_TEST": json.dumps(connection)}


def _stored(store_url: str) -> list:
    from retrieval_eval.store import open_store

    store = open_store(store_url)
    try:
        return store.history("handbook.demo", "switchable_retrievers:switchable")
    finally:
        store.close()


def _scenario(
    airflow_env: dict[str, str],
    tmp_path: Path,
    store_url: str,
    *,
    full: bool = True,
    store_connection: str | None = None,
) -> None:
    """Runs against ``store_url``; with ``store_connection`` the DAG finds it in a connection."""
    config = write_config(
        tmp_path / "config.yaml",
        store="sqlite:///unused.sqlite" if store_connection else store_url,
        retriever="switchable_retrievers:switchable",
        alerts=[{"type": "slack", "connection_id": "slack_test"}],
        airflow={"store_connection_id": "retrieval_eval_db"} if store_connection else None,
    )
    with RecordingServer() as slack:
        env = {"RETRIEVAL_EVAL_CONFIG": str(config), **_slack_env(slack)}
        if store_connection:
            env["AIRFLOW_CONN_RETRIEVAL_EVAL_DB"] = store_connection

        first = run_dag(airflow_env, DAG_ID, extra_env={**env, "RE_TEST_MODE": "good"})
        assert first["state"] == "success", first["log"][-3000:]
        assert first["tasks"]["no_regression"] == "success"
        assert first["tasks"]["alert_regression"] == "skipped"
        # the set was fanned out over 4 batches, not one task per question
        assert sorted(k for k in first["tasks"] if k.startswith("retrieve")) == [
            f"retrieve[{i}]" for i in range(4)
        ]
        runs = _stored(store_url)
        assert len(runs) == 1
        assert runs[0].result.question_count == 46
        assert runs[0].verdict_state == "baseline"

        second = run_dag(airflow_env, DAG_ID, extra_env={**env, "RE_TEST_MODE": "good"})
        assert second["state"] == "success", second["log"][-3000:]
        assert second["tasks"]["no_regression"] == "success"
        runs = _stored(store_url)
        assert [r.verdict_state for r in runs] == ["no_regression", "baseline"]
        assert runs[0].result.top1_hit_rate == runs[1].result.top1_hit_rate
        assert slack.requests == []

        degraded = run_dag(airflow_env, DAG_ID, extra_env={**env, "RE_TEST_MODE": "degraded"})
        assert degraded["state"] == "success", degraded["log"][-3000:]
        assert degraded["tasks"]["alert_regression"] == "success"
        assert degraded["tasks"]["no_regression"] == "skipped"
        assert len(slack.requests) == 1
        posted = slack.requests[0]
        assert posted["path"] == "/" + WEBHOOK_SECRET
        text = posted["body"]["text"]
        baseline = runs[1].result
        latest = _stored(store_url)[0]
        assert latest.verdict_state == "regression"
        assert "handbook.demo" in text and "switchable_retrievers:switchable" in text
        assert f"Top-1: {baseline.top1_hit_rate * 100:.1f}% → 0.0%" in text
        assert f"Top-3: {baseline.top3_hit_rate * 100:.1f}% → 0.0%" in text
        assert f"Run {latest.id}" in text and f"/runs/{latest.id}" in text
        assert "Now missed at top-1:" in text
        assert posted["body"]["blocks"][0]["type"] == "header"
        # the webhook secret never reaches the task logs
        assert WEBHOOK_SECRET not in degraded["log"]

        if not full:
            return

        # with fail_on_regression the DAG run fails, after the alert went out
        failing = run_dag(
            airflow_env,
            DAG_ID,
            conf={"fail_on_regression": True},
            extra_env={**env, "RE_TEST_MODE": "degraded"},
        )
        assert failing["state"] == "failed"
        assert failing["tasks"]["alert_regression"] == "failed"
        assert len(slack.requests) == 2

        broken = run_dag(airflow_env, DAG_ID, extra_env={**env, "RE_TEST_MODE": "broken"})
        assert broken["tasks"]["alert_invalid_run"] == "failed"  # alert sent, run marked failed
        assert broken["tasks"]["alert_regression"] == "skipped"
        assert broken["state"] == "failed"
        assert len(slack.requests) == 3
        invalid_text = slack.requests[2]["body"]["text"]
        assert "could not be trusted" in invalid_text
        assert "46 of 46 questions failed" in invalid_text
        latest = _stored(store_url)[0]
        assert latest.status == "invalid" and latest.verdict_state == "invalid_run"


def test_demo_dag_on_sqlite(airflow_env: dict[str, str], tmp_path: Path) -> None:
    _scenario(airflow_env, tmp_path, f"sqlite:///{tmp_path / 'results.sqlite'}")


@pytest.mark.postgres
def test_demo_dag_on_postgres(airflow_env: dict[str, str], tmp_path: Path, pg_url: str) -> None:
    import uuid

    import psycopg

    schema = f"re_airflow_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'create schema "{schema}"')
    try:
        url = f"{pg_url}?options=-csearch_path%3D{schema}"
        # the branches are covered on SQLite; here: baseline, no_regression, regression, with
        # the store found through an Airflow connection as in production
        _scenario(airflow_env, tmp_path, url, full=False, store_connection=url)
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'drop schema "{schema}" cascade')


def test_bad_golden_set_fails_load_task_with_the_validation_message(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "identifier: handbook.demo\nquestions:\n"
        "  - {id: q1, question: '  ', form: match, expected_document_ids: [a]}\n"
        "  - {id: q2, question: ok, form: sideways, expected_document_ids: [a]}\n"
    )
    config = write_config(
        tmp_path / "config.yaml",
        store=f"sqlite:///{tmp_path / 'r.sqlite'}",
        retriever="handbook_bm25",
        golden=bad,
    )
    outcome = run_dag(
        airflow_env,
        "retrieval_eval__handbook_demo__handbook_bm25",
        extra_env={"RETRIEVAL_EVAL_CONFIG": str(config)},
    )
    assert outcome["state"] == "failed"
    assert outcome["tasks"]["load_golden_set"] == "failed"
    assert "question 'q1' (#1, line 3): field 'question'" in outcome["log"]
    assert "unknown form 'sideways'" in outcome["log"]

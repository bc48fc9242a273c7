"""Alerts are bounded and never lost: against a real server on 127.0.0.1, a webhook answering a
redirect is a failed delivery (retried, never ``sent``), a trickled answer is cut off at the send
deadline, a huge one is not held in memory; a ``sending`` marker left by a killed send expires so
the alert is sent by the next try; every Airflow task has an execution timeout from the config."""

from __future__ import annotations

import json
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_helpers import ROOT, write_config
from servers.hostile_server import HostileServer
from sqlalchemy import update
from test_alerts import RESULT

from retrieval_eval.airflow.alerts import CLAIM_EXPIRES_S, build_message, send_alerts
from retrieval_eval.judging.recording import Recorded
from retrieval_eval.judging.regression import Verdict
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.schema import eval_alert

pytestmark = pytest.mark.airflow

RECORDED = Recorded(run_id=12, saved=True, verdict=Verdict(state="regression", summary="down"))
SPECS = [{"type": "webhook", "connection_id": "hook_b"}]
CHANNEL = "webhook:hook_b"
KEY = "airflow:d:r1"


@pytest.fixture
def store(tmp_path: Path) -> Store:
    opened = open_store(f"sqlite:///{tmp_path / 'r.sqlite'}")
    yield opened  # type: ignore[misc]
    opened.close()


def _hook(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    monkeypatch.setenv(
        "AIRFLOW_CONN_HOOK_B", json.dumps({"conn_type": "http", "host": url, "password": "tok-9"})
    )


def _send(store: Store | None = None) -> str:
    message = build_message("regression", RESULT, RECORDED)
    return send_alerts(SPECS, message, store=store, run_key=KEY if store else None)


@pytest.mark.parametrize("status", [302, 307])
def test_a_redirect_is_a_failed_delivery_retried_later(
    monkeypatch: pytest.MonkeyPatch, store: Store, status: int
) -> None:
    with HostileServer() as server:
        _hook(monkeypatch, f"{server.url}/redirect-{status}")
        with pytest.raises(RuntimeError, match=rf"HTTP {status} \(a redirect, not followed\)"):
            _send(store)
        assert store.alert_state(KEY, CHANNEL) is None  # released: the next try sends it
        _hook(monkeypatch, f"{server.url}/ok")
        assert _send(store) == f"sent: {CHANNEL}"
    assert store.alert_state(KEY, CHANNEL) == "sent"


def test_a_trickled_answer_is_cut_off_at_the_send_deadline(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from retrieval_eval.airflow.alerts import webhook

    monkeypatch.setattr(webhook, "SEND_DEADLINE_S", 2.0)
    with HostileServer() as server:
        _hook(monkeypatch, f"{server.url}/trickle")
        started = time.monotonic()
        with pytest.raises(RuntimeError, match="'hook_b' failed"):
            _send()
        took = time.monotonic() - started
    assert took < 5, f"the send took {took:.1f} s"  # the answer alone takes 47 s


def test_a_huge_answer_is_not_held_in_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    with HostileServer(size=40 * 2**20) as server:
        _hook(monkeypatch, f"{server.url}/huge")
        tracemalloc.start()
        try:
            assert _send() == f"sent: {CHANNEL}"
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.0f} MiB"


def _age_claim(store: Store, seconds: float) -> None:
    with store.engine.begin() as conn:
        conn.execute(
            update(eval_alert)
            .where(eval_alert.c.run_key == KEY)
            .values(updated_at=datetime.now(UTC) - timedelta(seconds=seconds))
        )


def test_a_sending_marker_older_than_the_deadline_expires_and_the_alert_is_sent(
    monkeypatch: pytest.MonkeyPatch, store: Store
) -> None:
    with HostileServer() as server:
        _hook(monkeypatch, f"{server.url}/ok")
        assert store.claim_alert(KEY, CHANNEL, "regression")  # a send that was then killed
        assert "an earlier try did not finish" in _send(store)  # still within its deadline
        assert server.hits["ok"] == 0
        _age_claim(store, CLAIM_EXPIRES_S + 5)
        assert _send(store) == f"sent: {CHANNEL}"
        assert server.hits["ok"] == 1 and store.alert_state(KEY, CHANNEL) == "sent"
        _age_claim(store, CLAIM_EXPIRES_S * 10)  # a sent one never expires
        assert "already sent" in _send(store)
        assert server.hits["ok"] == 1


def test_every_task_has_the_configured_execution_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    config = write_config(
        tmp_path / "c.yaml",
        store="sqlite:///x.sqlite",
        retriever="handbook_bm25",
        airflow={"task_timeout_s": 900},
    )
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(config))
    dag = DagBag(dag_folder=str(ROOT / "dags")).dags["retrieval_eval__handbook_demo__handbook_bm25"]
    for task in dag.tasks:
        assert task.execution_timeout == timedelta(seconds=900), task.task_id

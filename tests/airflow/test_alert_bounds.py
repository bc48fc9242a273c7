"""Alerts are bounded and never lost: against a real server on 127.0.0.1, for the Slack and the
generic webhook senders alike, a redirect is a failed delivery (retried, never ``sent``), a
trickled answer (headers or body) is cut off at the send deadline, a 1 GiB one is neither read nor
held in memory; a ``sending`` marker left by a killed send expires so the alert is sent by the next
try; every Airflow task, of the evaluation and the replay DAGs, has the configured execution
timeout."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from dag_helpers import EXAMPLES, ROOT, write_config
from servers.hostile_server import HostileServer
from sqlalchemy import update
from test_alerts import RESULT

from retrieval_eval.airflow.alerts import CLAIM_EXPIRES_S, build_message, send_alerts
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.schema import eval_alert
from retrieval_eval.verdicts.regression import Verdict
from retrieval_eval.workflows.recording import Recorded

pytestmark = pytest.mark.airflow

LOGS = EXAMPLES / "logs" / "queries.jsonl"

RECORDED = Recorded(run_id=12, saved=True, verdict=Verdict(state="regression", summary="down"))
KEY = "airflow:d:r1"
# each sender, with the Airflow connection that points it at ``url`` (Slack's hook appends the
# webhook path in the password to the host)
SENDERS = {
    "webhook": lambda url: {"conn_type": "http", "host": url, "password": "tok-9"},
    "slack": lambda url: {"conn_type": "slackwebhook", "host": url, "password": "T1/B2/sec-9"},
}


@pytest.fixture(params=sorted(SENDERS))
def kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    opened = open_store(f"sqlite:///{tmp_path / 'r.sqlite'}")
    yield opened
    opened.close()


def _hook(monkeypatch: pytest.MonkeyPatch, kind: str, url: str) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{kind.upper()}_B", json.dumps(SENDERS[kind](url)))


def _channel(kind: str) -> str:
    return f"{kind}:{kind}_b"


def _send(kind: str, store: Store | None = None) -> str:
    message = build_message("regression", RESULT, RECORDED)
    specs = [{"type": kind, "connection_id": f"{kind}_b"}]
    return send_alerts(specs, message, store=store, run_key=KEY if store else None)


@pytest.mark.parametrize("status", [302, 307])
def test_a_redirect_is_a_failed_delivery_retried_later(
    monkeypatch: pytest.MonkeyPatch, store: Store, kind: str, status: int
) -> None:
    with HostileServer() as server:
        _hook(monkeypatch, kind, f"{server.url}/redirect-{status}")
        with pytest.raises(RuntimeError, match=rf"HTTP {status} \(a redirect, not followed\)"):
            _send(kind, store)
        assert store.alerts.state(KEY, _channel(kind)) is None  # released: the next try sends it
        _hook(monkeypatch, kind, f"{server.url}/ok")
        assert _send(kind, store) == f"sent: {_channel(kind)}"
    assert store.alerts.state(KEY, _channel(kind)) == "sent"


@pytest.mark.parametrize("mode", ["trickle", "trickle-headers"])
def test_a_trickled_answer_is_cut_off_at_the_send_deadline(
    monkeypatch: pytest.MonkeyPatch, kind: str, mode: str
) -> None:
    from retrieval_eval.airflow.alerts import webhook

    monkeypatch.setattr(webhook, "SEND_DEADLINE_S", 1.0)
    with HostileServer() as server:
        _hook(monkeypatch, kind, f"{server.url}/{mode}")
        started = time.monotonic()
        with pytest.raises(RuntimeError, match=f"'{kind}_b' failed"):
            _send(kind)
        took = time.monotonic() - started
    assert took < 5, f"the send took {took:.1f} s"  # the answer alone takes 12 s and more


def test_a_1_gib_answer_is_neither_read_nor_held(
    monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    with HostileServer(size=2**30) as server:
        _hook(monkeypatch, kind, f"{server.url}/huge")
        tracemalloc.start()
        started = time.monotonic()
        try:
            assert _send(kind) == f"sent: {_channel(kind)}"  # a 2xx is a delivery, read or not
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        took = time.monotonic() - started
    assert peak < 8 * 2**20, f"peak {peak / 2**20:.0f} MiB"
    # what the server got into the socket before the sender hung up: the cap and the buffers
    assert server.written < 64 * 2**20, f"{server.written / 2**20:.0f} MiB sent"
    assert took < 10, f"the send took {took:.1f} s"


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
    channel = _channel("webhook")
    with HostileServer() as server:
        _hook(monkeypatch, "webhook", f"{server.url}/ok")
        assert store.alerts.claim(KEY, channel, "regression")  # a send that was then killed
        assert "an earlier try did not finish" in _send("webhook", store)  # within its deadline
        assert server.hits["ok"] == 0
        _age_claim(store, CLAIM_EXPIRES_S + 5)
        assert _send("webhook", store) == f"sent: {channel}"
        assert server.hits["ok"] == 1 and store.alerts.state(KEY, channel) == "sent"
        _age_claim(store, CLAIM_EXPIRES_S * 10)  # a sent one never expires
        assert "already sent" in _send("webhook", store)
        assert server.hits["ok"] == 1


def test_the_claim_outlives_every_send() -> None:
    """A claim may expire only once no send can still be under way: after the send deadline,
    which bounds both senders (connect, headers and answer together)."""
    from retrieval_eval.airflow.alerts import webhook

    assert CLAIM_EXPIRES_S > 2 * webhook.SEND_DEADLINE_S


def test_every_task_has_the_configured_execution_timeout(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.dag_processing.dagbag import DagBag

    replay = {
        "samples": {"top": {"source": {"path": str(LOGS)}, "method": "top", "size": 4}},
        "replays": [{"sample": "top", "retriever": "handbook_bm25"}],
    }
    config = write_config(
        tmp_path / "c.yaml",
        store="sqlite:///x.sqlite",
        retriever="handbook_bm25",
        airflow={"task_timeout_s": 900},
        extra=replay,
    )
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(config))
    dags = DagBag(dag_folder=str(ROOT / "dags")).dags
    evaluation = dags["retrieval_eval__handbook_demo__handbook_bm25"]
    replays = dags["retrieval_eval_replay__top__handbook_bm25"]
    for task in (*evaluation.tasks, *replays.tasks):
        assert task.execution_timeout == timedelta(seconds=900), (task.dag_id, task.task_id)
    assert len(replays.tasks) >= 5

"""Deadlines: the DAG carries Airflow's DeadlineAlert with the configured interval, and its
callback, run as the triggerer runs it, posts "not finished" to a real local HTTP server
(Slack stands in). The missed deadline itself is the scheduler's business, not tested here."""

from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import ROOT, write_config
from slack_server import RecordingServer

pytestmark = pytest.mark.airflow

DAG_ID = "retrieval_eval__handbook_demo__handbook_bm25"
ALERTS = [
    {"type": "slack", "connection_id": "oncall", "kinds": ["deadline"], "mention": "<!here>"},
    {"type": "slack", "connection_id": "team", "kinds": ["labels"]},
]


def test_the_dag_carries_the_configured_deadline_and_its_serialized_form_keeps_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.dag_processing.dagbag import DagBag
    from airflow.sdk import AsyncCallback, DeadlineReference
    from airflow.serialization.serialized_objects import DagSerialization

    config = write_config(
        tmp_path / "c.yaml", store="sqlite:///x.sqlite", retriever="handbook_bm25", alerts=ALERTS
    )
    data = yaml.safe_load(config.read_text())
    data["evaluations"][0]["deadline_s"] = 7200
    data["evaluations"].append({"set": "handbook.demo", "retriever": "other", "schedule": None})
    config.write_text(yaml.safe_dump(data))
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(config))
    bag = DagBag(dag_folder=str(ROOT / "dags"))
    assert bag.import_errors == {}
    (deadline,) = bag.dags[DAG_ID].deadline
    assert deadline.interval.total_seconds() == 7200
    assert deadline.reference == DeadlineReference.DAGRUN_QUEUED_AT
    assert isinstance(deadline.callback, AsyncCallback)
    assert deadline.callback.path == "retrieval_eval.airflow.deadline.deadline_missed"
    assert deadline.callback.kwargs == {
        "alerts": ALERTS,
        "set_identifier": "handbook.demo",
        "retriever": "handbook_bm25",
        "deadline_s": 7200,
    }
    assert not bag.dags["retrieval_eval__handbook_demo__other"].deadline
    # what the scheduler reads: the serialized DAG keeps the interval and the callback
    served = json.dumps(DagSerialization.to_dict(bag.dags[DAG_ID]))
    assert "retrieval_eval.airflow.deadline.deadline_missed" in served
    assert "7200" in served


def _trigger_events(callback_kwargs: dict[str, Any]) -> list[dict[str, Any]]:
    """Run the deadline callback as Airflow's triggerer does (its CallbackTrigger)."""
    from airflow.triggers.callback import CallbackTrigger

    async def run() -> list[dict[str, Any]]:
        trigger = CallbackTrigger(
            "retrieval_eval.airflow.deadline.deadline_missed", dict(callback_kwargs)
        )
        return [event.payload async for event in trigger.run()]

    return asyncio.run(run())


def _context() -> dict[str, Any]:
    return {
        "dag_run": {
            "dag_id": DAG_ID,
            "dag_run_id": "scheduled__2026-12-04T03:00:00+00:00",
            "queued_at": "2026-12-04T03:00:02+00:00",
            "state": "running",
        },
        "deadline": {"id": "d1", "deadline_time": datetime(2026, 12, 4, 5, 0, 2, tzinfo=UTC)},
    }


def test_a_missed_deadline_alerts_the_channels_that_route_it_naming_the_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    kwargs = {
        "alerts": ALERTS,
        "set_identifier": "handbook.demo",
        "retriever": "handbook_bm25",
        "deadline_s": 7200,
        "context": _context(),
    }
    with RecordingServer() as server:
        for name in ("oncall", "team"):
            monkeypatch.setenv(
                f"AIRFLOW_CONN_{name.upper()}",
                json.dumps(
                    {
                        "conn_type": "slackwebhook",
                        "password": f"T0/B0/secret-{name}",
                        "host": f"http://127.0.0.1:{server.port}",
                    }
                ),
            )
        events = _trigger_events(kwargs)
    assert [e["state"] for e in events] == ["running", "success"]
    assert events[-1]["body"] == "sent: slack:oncall"
    (request,) = server.requests
    assert request["path"] == "/T0/B0/secret-oncall"
    assert request["body"]["text"].splitlines() == [
        "Retrieval eval not finished in time: handbook.demo × handbook_bm25",
        "<!here>",
        f"DAG run scheduled__2026-12-04T03:00:00+00:00 of {DAG_ID} not finished within 2 h of "
        "being queued (queued 2026-12-04 03:00:02 UTC, due 2026-12-04 05:00:02 UTC, now "
        "running). A retrieval or index call may hang: see the run's running tasks in Airflow.",
    ]


def test_a_deadline_alert_that_cannot_be_delivered_fails_the_callback_without_the_secret(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Slack down: the callback fails (Airflow records it failed), naming the connection, and
    its state does not carry the webhook path."""
    monkeypatch.setenv(
        "AIRFLOW_CONN_ONCALL",
        json.dumps(
            {"conn_type": "slackwebhook", "password": "T9/B9/hush", "host": "http://127.0.0.1:9"}
        ),
    )
    events = _trigger_events(
        {
            "alerts": ALERTS[:1],
            "set_identifier": "handbook.demo",
            "retriever": "handbook_bm25",
            "deadline_s": 90,
            "context": _context(),
        }
    )
    assert events[-1]["state"] == "failed"
    assert "Slack alert through connection 'oncall' failed" in events[-1]["body"]
    assert "hush" not in events[-1]["body"]

"""Deadlines: a DAG run not finished ``deadline_s`` after it was queued alerts (kind ``deadline``).

Airflow's own :class:`~airflow.sdk.DeadlineAlert` (3.1+) does the watching: the scheduler
notices the missed deadline and the triggerer runs :func:`deadline_missed`, which posts to the
DAG's alert channels that carry ``deadline``. So a hung index or retriever is noticed while the
run is still hanging, not when its tasks' timeouts and retries are used up. Airflow runs the
callback once per missed deadline; it claims no store marker (the triggerer need not reach the
store).
"""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta
from typing import Any

from airflow.sdk.definitions.callback import AsyncCallback
from airflow.sdk.definitions.deadline import DeadlineAlert, DeadlineReference

from retrieval_eval.config.models import DagSpec, ScheduledSpec


def deadline_for(
    spec: DagSpec, set_identifier: str, retriever: str | None = None
) -> DeadlineAlert | None:
    """The DAG's deadline: ``spec.deadline_s`` after a run is queued (None: no deadline). The
    callback gets what its message needs, as JSON: the channels, the set (or sample) and
    retriever (``retriever``, else the spec's), the interval."""
    if spec.deadline_s is None:
        return None
    if retriever is None:
        assert isinstance(spec, ScheduledSpec)  # a DAG over several names says which
        retriever = spec.retriever
    return DeadlineAlert(
        reference=DeadlineReference.DAGRUN_QUEUED_AT,
        interval=timedelta(seconds=spec.deadline_s),
        callback=AsyncCallback(
            deadline_missed,
            kwargs={
                "alerts": [a.model_dump(exclude_none=True) for a in spec.alerts],
                "set_identifier": set_identifier,
                "retriever": retriever,
                "deadline_s": spec.deadline_s,
            },
        ),
    )


async def deadline_missed(
    alerts: list[dict[str, Any]],
    set_identifier: str,
    retriever: str,
    deadline_s: float,
    context: dict[str, Any] | None = None,
) -> str:
    """The deadline's callback, run by the triggerer: the "not finished" alert, sent in a thread
    (the senders block) so the triggerer's other work goes on."""
    from retrieval_eval.airflow.alerts import AlertMessage, send_alerts

    message = AlertMessage(
        kind="deadline",
        set_identifier=set_identifier,
        retriever=retriever,
        summary=missed_summary(context or {}, deadline_s),
    )
    return await asyncio.to_thread(send_alerts, alerts, message)


def missed_summary(context: dict[str, Any], deadline_s: float) -> str:
    """``DAG run R of D not finished within 2 h of being queued (queued 03:00:02 UTC, due
    05:00:02 UTC; now running)``, from the simple context Airflow gives a deadline callback."""
    run = context.get("dag_run") or {}
    deadline = context.get("deadline") or {}
    within = f"{deadline_s / 3600:g} h" if deadline_s >= 3600 else f"{deadline_s:g} s"
    when = [
        f"{label} {_when(value)}"
        for label, value in (
            ("queued", run.get("queued_at")),
            ("due", deadline.get("deadline_time")),
        )
        if value
    ]
    if run.get("state"):
        when.append(f"now {run['state']}")
    detail = f" ({', '.join(when)})" if when else ""
    return (
        f"DAG run {run.get('dag_run_id', '?')} of {run.get('dag_id', '?')} not finished within "
        f"{within} of being queued{detail}. A retrieval or index call may hang: see the run's "
        "running tasks in Airflow."
    )


def _when(value: Any) -> str:
    """A time as ``YYYY-MM-DD HH:MM:SS UTC`` (Airflow hands it as a datetime or ISO text)."""
    try:
        moment = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    except ValueError:
        return str(value)
    return moment.strftime("%Y-%m-%d %H:%M:%S %Z").strip()

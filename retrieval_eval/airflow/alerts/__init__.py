"""Alert channels, registered in one place. Each sender has ``send(AlertMessage)``.

Connections (where to send, with the secret) live in Airflow; senders only build and post the
message, as provider packages keep hooks apart from notifiers.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.airflow.alerts.message import AlertMessage, build_message
from retrieval_eval.safety.redaction import redact

if TYPE_CHECKING:
    from retrieval_eval.store import Store

# a claim still "sending" this long after it was made belongs to a send that was killed
CLAIM_EXPIRES_S = 120.0

SENDERS: dict[str, str] = {
    "slack": "retrieval_eval.airflow.alerts.slack:SlackAlertSender",
    "webhook": "retrieval_eval.airflow.alerts.webhook:WebhookAlertSender",
}


def sender_for(spec: dict[str, Any]) -> Any:
    from retrieval_eval.retrievers.registry import import_object

    options = dict(spec)
    kind = options.pop("type", "slack")
    if kind not in SENDERS:
        raise ValueError(f"unknown alert type {kind!r}; available: {', '.join(sorted(SENDERS))}")
    if options.get("connection_id") is None:
        options.pop("connection_id", None)
    return import_object(SENDERS[kind])(**options)


def send_alerts(
    specs: list[dict[str, Any]],
    message: AlertMessage,
    *,
    store: Store | None = None,
    run_key: str | None = None,
) -> str:
    """Send through every configured channel, at most once per run and channel; say what happened.

    With a ``store`` and the run's ``run_key``, each channel is claimed in the store's alert
    markers first: a channel already claimed for this run (an earlier try, a cleared and re-run
    task) is skipped, a failed send releases its claim so a retry may send. A claim left
    ``sending`` by a process killed mid-send expires after :data:`CLAIM_EXPIRES_S` (longer than
    any send may take: a webhook send's deadline, Slack's timeout), and the next try sends it; a
    delivered send is marked ``sent`` before anything else happens, so it is never sent twice.
    Every channel is tried before any failure is raised.

    The verdict's alerts (``regression``, ``invalid_run``) share one marker per channel: a run
    has one verdict. A ``labels`` alert is a separate kind, claimed under ``<channel>#labels``, so
    a run may send both once and neither blocks the other.
    """
    sent: list[str] = []
    skipped: list[str] = []
    failures: list[str] = []
    for spec in specs:
        sender = sender_for(spec)
        channel = f"{sender.name}:{getattr(sender, 'connection_id', '')}"
        if message.kind == "labels":
            channel += "#labels"
        if (
            store is not None
            and run_key
            and not store.claim_alert(
                run_key, channel, message.kind, expire_after_s=CLAIM_EXPIRES_S
            )
        ):
            state = store.alert_state(run_key, channel)
            why = "already sent" if state == "sent" else "an earlier try did not finish"
            skipped.append(f"{channel} ({why}; not sent twice)")
            continue
        try:
            sender.send(message)
        except Exception as exc:
            if store is not None and run_key:
                store.release_alert(run_key, channel)
            failures.append(redact(str(exc)))  # the task log shows it
            continue
        if store is not None and run_key:
            store.alert_sent(run_key, channel)  # first: a kill after this never sends it again
        sent.append(channel)
    if failures:
        raise RuntimeError("; ".join(failures))
    parts = [f"sent: {', '.join(sent)}"] if sent else []
    if skipped:
        parts.append(f"skipped: {', '.join(skipped)}")
    return "; ".join(parts) or "no alert channel configured"


__all__ = ["SENDERS", "AlertMessage", "build_message", "send_alerts", "sender_for"]

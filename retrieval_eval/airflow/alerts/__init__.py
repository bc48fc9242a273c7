"""Alert channels, registered in one place. Each sender has ``send(AlertMessage)``.

Connections (where to send, with the secret) live in Airflow; senders only build and post the
message, as provider packages keep hooks apart from notifiers.
"""

from __future__ import annotations

from typing import Any

from retrieval_eval.airflow.alerts.message import AlertMessage, build_message

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


def send_alerts(specs: list[dict[str, Any]], message: AlertMessage) -> list[str]:
    """Send through every configured channel; all are tried before any failure is raised."""
    sent: list[str] = []
    failures: list[str] = []
    for spec in specs:
        sender = sender_for(spec)
        try:
            sender.send(message)
            sent.append(sender.name)
        except Exception as exc:
            failures.append(str(exc))
    if failures:
        raise RuntimeError("; ".join(failures))
    return sent


__all__ = ["SENDERS", "AlertMessage", "build_message", "send_alerts", "sender_for"]

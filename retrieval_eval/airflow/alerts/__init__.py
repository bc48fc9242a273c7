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


# a channel's routing, read by send_alerts and not passed to its sender
ROUTING_KEYS = ("kinds", "mention")


def carries(spec: dict[str, Any], kind: str) -> bool:
    """Whether a channel routes ``kind``: unset ``kinds`` carry all, and a channel that carries
    ``regression`` carries the ``recovered`` that closes it."""
    kinds = spec.get("kinds")
    return kinds is None or kind in kinds or (kind == "recovered" and "regression" in kinds)


def sender_for(spec: dict[str, Any]) -> Any:
    from retrieval_eval.retrievers.registry import import_object

    options = {key: value for key, value in spec.items() if key not in ROUTING_KEYS}
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

    The verdict's alerts (``regression``, ``invalid_run``, ``recovered``) share one marker per
    channel: a run has one verdict. A ``labels`` alert is a separate kind, claimed under
    ``<channel>#labels``, so a run may send both once and neither blocks the other.

    Routing: a channel gets only the kinds it carries (:func:`carries`), its ``mention`` first.
    A ``recovered`` message goes only to a channel whose last regression-or-recovered alert for
    the same set and retriever was a regression (the store's markers say), so it closes each
    alerted regression once.
    """
    sent: list[str] = []
    skipped: list[str] = []
    failures: list[str] = []
    for spec in specs:
        if not carries(spec, message.kind):
            continue
        sender = sender_for(spec)
        channel = f"{sender.name}:{getattr(sender, 'connection_id', '')}"
        if message.kind == "labels":
            channel += "#labels"
        if message.kind == "recovered" and not _regression_open(store, run_key, channel, message):
            continue
        if (
            store is not None
            and run_key
            and not store.alerts.claim(
                run_key, channel, message.kind, expire_after_s=CLAIM_EXPIRES_S
            )
        ):
            state = store.alerts.state(run_key, channel)
            why = "already sent" if state == "sent" else "an earlier try did not finish"
            skipped.append(f"{channel} ({why}; not sent twice)")
            continue
        try:
            sender.send(message.model_copy(update={"mention": spec.get("mention")}))
        except Exception as exc:
            if store is not None and run_key:
                store.alerts.release(run_key, channel)
            failures.append(redact(str(exc)))  # the task log shows it
            continue
        if store is not None and run_key:
            store.alerts.sent(run_key, channel)  # first: a kill after this never sends it again
        sent.append(channel)
    if failures:
        raise RuntimeError("; ".join(failures))
    parts = [f"sent: {', '.join(sent)}"] if sent else []
    if skipped:
        parts.append(f"skipped: {', '.join(skipped)}")
    return "; ".join(parts) or f"no alert channel to send a {message.kind} alert to"


def _regression_open(
    store: Store | None, run_key: str | None, channel: str, message: AlertMessage
) -> bool:
    """Whether ``channel``'s last sent regression-or-recovered alert of the message's set and
    retriever, before this run, was a regression (so a recovery is due there)."""
    if store is None or not run_key:
        return False
    last = store.alerts.last_kind(
        message.set_identifier,
        message.retriever,
        channel,
        ("regression", "recovered"),
        before_run_key=run_key,
    )
    return last == "regression"


__all__ = ["SENDERS", "AlertMessage", "build_message", "carries", "send_alerts", "sender_for"]

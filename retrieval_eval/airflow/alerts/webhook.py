"""A generic JSON webhook alert: POSTs the message as JSON to the URL in an Airflow connection.

Connection fields: ``host`` is the URL (``https://hooks.example.com/path``; a ``port`` is added
when given), ``password`` (optional) is sent as a Bearer token. Neither appears in logs or errors:
both are registered with :mod:`retrieval_eval.safety.redaction` before anything is sent.
"""

from __future__ import annotations

from typing import Any

import httpx

from retrieval_eval.airflow.alerts.message import (
    AlertMessage,
    redacted,
    register_webhook_connection,
)


def webhook_url(connection: Any) -> str:
    host = (connection.host or "").rstrip("/")
    if "://" not in host:
        host = f"{connection.schema or 'https'}://{host}"
    if connection.port and f":{connection.port}" not in host.split("://", 1)[1].split("/", 1)[0]:
        scheme, rest = host.split("://", 1)
        authority, _, path = rest.partition("/")
        host = f"{scheme}://{authority}:{connection.port}" + (f"/{path}" if path else "")
    return host


class WebhookAlertSender:
    name = "webhook"

    def __init__(self, connection_id: str = "retrieval_eval_webhook", **_: Any) -> None:
        self.connection_id = connection_id

    def payload(self, message: AlertMessage) -> dict[str, Any]:
        payload = {
            "title": message.title,
            "text": message.text(),
            **message.model_dump(mode="json"),
        }
        return dict(redacted(payload))

    def send(self, message: AlertMessage) -> None:
        from airflow.sdk import BaseHook

        connection = BaseHook.get_connection(self.connection_id)
        register_webhook_connection(connection)
        headers = {"Authorization": f"Bearer {connection.password}"} if connection.password else {}
        try:
            response = httpx.post(
                webhook_url(connection), json=self.payload(message), headers=headers, timeout=30
            )
        except httpx.HTTPError as exc:
            raise RuntimeError(
                f"webhook alert through connection {self.connection_id!r} failed "
                f"({type(exc).__name__})"
            ) from None
        if response.status_code >= 400:
            raise RuntimeError(
                f"webhook alert through connection {self.connection_id!r} answered HTTP "
                f"{response.status_code}"
            )

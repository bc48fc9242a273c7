"""A generic JSON webhook alert: POSTs the message as JSON to the URL in an Airflow connection.

Connection fields: ``host`` is the URL (``https://hooks.example.com/path``; a ``port`` is added
when given), ``password`` (optional) is sent as a Bearer token. Neither appears in logs or errors:
both are registered with :mod:`retrieval_eval.safety.redaction` before anything is sent.

A send (:func:`post_alert`, the Slack sender's too) ends within :data:`SEND_DEADLINE_S`, connect,
headers and answer together (the connections of :mod:`retrieval_eval.retrievers.http_bounds`),
and reads at most :data:`MAX_ANSWER_BYTES` of the answer. Only a 2xx answer is a delivery: a
redirect is not followed (the payload and its token would go to another host) and fails the send,
as a 4xx or 5xx does, so the alert is retried.
"""

from __future__ import annotations

import contextlib
from typing import Any

import urllib3

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


SEND_DEADLINE_S = 30.0
MAX_ANSWER_BYTES = 64 * 1024


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
        what = f"webhook alert through connection {self.connection_id!r}"
        post_alert(webhook_url(connection), self.payload(message), headers, what)


def post_alert(
    url: str, payload: Any, headers: dict[str, str], what: str, proxy: str | None = None
) -> None:
    """POST ``payload`` as JSON within :data:`SEND_DEADLINE_S`, through ``proxy`` (else the
    ``*_proxy`` environment's, as urllib would); RuntimeError, starting with ``what`` and naming
    neither the URL nor a header, unless the answer is a 2xx. Its body is read up to
    :data:`MAX_ANSWER_BYTES` and dropped: only the status says whether it was delivered."""
    from retrieval_eval.retrievers.http_bounds import (
        TooLargeError,
        bounded_pool_manager,
        deadline,
        read_capped,
    )

    manager = bounded_pool_manager(
        proxy_url=proxy or _environment_proxy(url),
        timeout=urllib3.Timeout(connect=SEND_DEADLINE_S, read=SEND_DEADLINE_S),
        retries=False,
    )
    try:
        with deadline(SEND_DEADLINE_S):
            response = manager.request(
                "POST", url, json=payload, headers=headers, redirect=False, preload_content=False
            )
            with contextlib.suppress(TooLargeError):  # a long answer says no more than its status
                read_capped(response, MAX_ANSWER_BYTES)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        raise RuntimeError(f"{what} failed ({type(exc).__name__})") from None
    finally:
        manager.clear()
    if not 200 <= response.status < 300:
        kind = "a redirect, not followed" if 300 <= response.status < 400 else "not a delivery"
        raise RuntimeError(
            f"{what} answered HTTP {response.status} ({kind}); the alert was not delivered"
        )


def _environment_proxy(url: str) -> str | None:
    """The proxy ``$https_proxy``/``$http_proxy`` name for ``url``, unless ``$no_proxy`` covers
    its host (urllib's own reading of them)."""
    import urllib.parse
    import urllib.request

    parts = urllib.parse.urlsplit(url)
    if urllib.request.proxy_bypass(parts.hostname or ""):
        return None
    return urllib.request.getproxies().get(parts.scheme)

"""Slack alerts to an incoming webhook, the URL read from a Slack provider connection
(connection type ``slackwebhook``: its host and the webhook path in its password, and its
``proxy`` extra).

The provider's hook only reads the connection; the message goes out through
:func:`~retrieval_eval.airflow.alerts.webhook.post_alert`, as the generic webhook's does: the Slack
SDK's client follows redirects, reads a whole answer into memory and bounds each socket read, not
the send. The webhook URL is never logged or put in an error: failures name only the connection
id, and the webhook path in the connection's password (``T000/B000/xxx``) is registered with
:mod:`retrieval_eval.safety.redaction` before anything is sent.
"""

from __future__ import annotations

from typing import Any

from retrieval_eval.airflow.alerts.message import AlertMessage, register_connection_secrets


class SlackAlertSender:
    name = "slack"

    def __init__(self, connection_id: str = "slack_default", **_: Any) -> None:
        self.connection_id = connection_id

    def blocks(self, message: AlertMessage) -> list[dict[str, Any]]:
        return [
            {"type": "header", "text": {"type": "plain_text", "text": message.title[:150]}},
            {"type": "section", "text": {"type": "mrkdwn", "text": "\n".join(message.lines())}},
        ]

    def send(self, message: AlertMessage) -> None:
        from airflow.providers.slack.hooks.slack_webhook import SlackWebhookHook

        from retrieval_eval.airflow.alerts.webhook import post_alert

        register_connection_secrets(self.connection_id)
        what = f"Slack alert through connection {self.connection_id!r}"
        try:
            client = SlackWebhookHook(slack_webhook_conn_id=self.connection_id).client
        except Exception as exc:
            # the exception text may carry the webhook URL: keep only its type
            raise RuntimeError(f"{what} failed ({type(exc).__name__})") from None
        body = {"text": message.text(), "blocks": self.blocks(message)}
        post_alert(client.url, body, {}, what, proxy=client.proxy)

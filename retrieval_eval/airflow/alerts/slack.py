"""Slack alerts through the Slack provider's webhook hook (connection type ``slackwebhook``).

The webhook URL lives in the Airflow connection and is never logged or put in an error: failures
are re-raised naming only the connection id, and the webhook path in the connection's password
(``T000/B000/xxx``) is registered with :mod:`retrieval_eval.safety.redaction` before anything is sent.
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

        register_connection_secrets(self.connection_id)
        hook = SlackWebhookHook(slack_webhook_conn_id=self.connection_id, timeout=30)
        try:
            hook.send(text=message.text(), blocks=self.blocks(message))
        except Exception as exc:
            # the exception text may carry the webhook URL: keep only its type
            raise RuntimeError(
                f"Slack alert through connection {self.connection_id!r} failed "
                f"({type(exc).__name__})"
            ) from None

"""Secrets for adapters: environment variables, Airflow connections, and redaction.

Secret values are read once when a retriever is built and never logged. Every adapter that holds
secrets passes its error text through :class:`Redactor` so a token cannot reach a report.

Airflow is imported only inside :func:`airflow_connection`, when a config names a
``connection_id``: the evaluation core stays importable without Airflow.
"""

from __future__ import annotations

import os
from typing import Any

from retrieval_eval.errors import ConfigError

MASK = "***"


def env_secret(variable: str, where: str) -> str:
    """The value of an environment variable; unset or empty is a ConfigError naming ``where``."""
    value = os.environ.get(variable)
    if not value:
        raise ConfigError(f"{where}: environment variable {variable} is not set (or empty)")
    return value


def airflow_connection(connection_id: str, where: str) -> Any:
    """An Airflow connection object (``host``, ``login``, ``password``, ``extra_dejson``, ...)."""
    try:
        from airflow.sdk import BaseHook
    except ImportError:
        raise ConfigError(
            f"{where}: connection_id needs Apache Airflow (pip install 'retrieval-eval[airflow]'); "
            "outside Airflow use the *_from_env options instead"
        ) from None
    try:
        return BaseHook.get_connection(connection_id)
    except Exception as exc:
        # only the not-found message is known to be free of secrets
        detail = (
            str(exc) if type(exc).__name__ == "AirflowNotFoundException" else type(exc).__name__
        )
        raise ConfigError(
            f"{where}: cannot read Airflow connection {connection_id!r} ({detail})"
        ) from None


class Redactor:
    """Replaces every known secret value in a text with ``***``."""

    def __init__(self, secrets: list[str] | None = None) -> None:
        # longest first, so a secret that contains another is masked whole
        self.secrets = sorted({s for s in secrets or [] if s}, key=len, reverse=True)

    def add(self, secret: str | None) -> None:
        if secret:
            self.secrets = sorted({*self.secrets, secret}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return text

"""Secrets for adapters: environment variables and Airflow connections.

Secret values are read once when a retriever is built and never logged. They are registered with
:mod:`retrieval_eval.safety.redaction` (a connection's password here, header values and URLs by the
adapter that knows what they are), whose ``redact`` masks them in every error text.

Airflow is imported only inside :func:`airflow_connection`, when a config names a
``connection_id``: the evaluation core stays importable without Airflow.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.extras import pip_command
from retrieval_eval.safety.redaction import register_credentials, register_header, register_secret
from retrieval_eval.safety.surrogates import lone_surrogate


def env_secret(variable: str, where: str) -> str:
    """The value of an environment variable; unset or empty is a ConfigError naming ``where``."""
    value = os.environ.get(variable)
    if not value:
        raise ConfigError(f"{where}: environment variable {variable} is not set (or empty)")
    if lone_surrogate(value):
        # a byte that is not UTF-8 (os.environ keeps it as a surrogate): named here, never shown
        raise ConfigError(
            f"{where}: environment variable {variable} holds a byte that is not UTF-8; a "
            "secret must be text"
        )
    return value


def env_key(variable: str, where: str) -> str:
    """An API key or token from an environment variable, registered so every error masks it."""
    key = env_secret(variable, where)
    register_secret(key)
    return key


def env_headers(variables: Mapping[str, str], where: str) -> dict[str, str]:
    """``{header: variable}`` as ``{header: value}``, each value registered as a header (masked
    whole, without its auth scheme, and Basic auth's credentials); ``where`` names the option."""
    headers = {}
    for header, variable in variables.items():
        headers[header] = env_secret(variable, f"{where}.{header}")
        register_header(headers[header])
    return headers


def airflow_connection(connection_id: str, where: str) -> Any:
    """An Airflow connection object (``host``, ``login``, ``password``, ``extra_dejson``, ...)."""
    try:
        from airflow.sdk import BaseHook
    except ImportError:
        raise ConfigError(
            f"{where}: connection_id needs Apache Airflow ({pip_command('airflow')}); "
            "outside Airflow use the *_from_env options instead"
        ) from None
    try:
        connection = BaseHook.get_connection(connection_id)
    except Exception as exc:
        # only the not-found message is known to be free of secrets
        detail = (
            str(exc) if type(exc).__name__ == "AirflowNotFoundException" else type(exc).__name__
        )
        raise ConfigError(
            f"{where}: cannot read Airflow connection {connection_id!r} ({detail})"
        ) from None
    register_credentials(connection.login, connection.password)
    return connection

"""The provider's connection types: the result store's and the webhook alert channel's.

Airflow's connection form shows each type's fields as :mod:`retrieval_eval.airflow.provider`
declares them (the labels say which field holds what); these hooks read them back. A store
connection is a PostgreSQL server named field by field (host, port, database in ``schema``,
login, password), or any store URL (``sqlite:///...`` too) in its ``url`` extra. A connection of
Airflow's own ``postgres`` type keeps working as the store: :func:`connection_store` reads it as
before.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseHook

from retrieval_eval.errors import InvalidInputError

STORE_CONN_TYPE = "retrieval_eval_store"
WEBHOOK_CONN_TYPE = "retrieval_eval_webhook"
STORE_URL_EXTRA = "url"


def connection_store(connection: Any) -> tuple[str, str]:
    """``(connection type, store URL)`` for :func:`retrieval_eval.store.url.store_url_for`, which
    accepts the types it can read: a store connection's own URL (see the module docstring), any
    other type's ``get_uri()``."""
    if connection.conn_type != STORE_CONN_TYPE:
        return connection.conn_type, str(connection.get_uri())
    extra = connection.extra_dejson
    url = extra.get(STORE_URL_EXTRA) or extra.get(f"extra__{STORE_CONN_TYPE}__{STORE_URL_EXTRA}")
    if url:
        return STORE_CONN_TYPE, str(url)
    if not connection.host:
        raise InvalidInputError(
            f"Airflow connection {connection.conn_id!r} ({STORE_CONN_TYPE}) names no store: "
            "fill in its Host (and Database, Login, Password) for PostgreSQL, or its Store URL "
            "(the 'url' extra) for any store"
        )
    from sqlalchemy.engine import URL

    return STORE_CONN_TYPE, URL.create(
        "postgresql",
        username=connection.login or None,
        password=connection.password or None,
        host=connection.host,
        port=connection.port or None,
        database=connection.schema or None,
    ).render_as_string(hide_password=False)


class _ConnectionHook(BaseHook):
    """A hook on one connection, its id given as ``<conn_name_attr>=`` (Airflow's convention:
    the connection form's test builds the hook that way) or the type's default."""

    conn_name_attr: str
    default_conn_name: str

    def __init__(self, **kwargs: Any) -> None:
        self.connection_id: str = kwargs.pop(self.conn_name_attr, self.default_conn_name)
        super().__init__(**kwargs)


class RetrievalEvalStoreHook(_ConnectionHook):
    """The result store the DAGs write and the dashboard reads (``airflow.store_connection_id``)."""

    conn_name_attr = "retrieval_eval_store_conn_id"
    default_conn_name = "retrieval_eval_store"
    conn_type = STORE_CONN_TYPE
    hook_name = "Retrieval-eval result store"

    def get_conn(self) -> str:
        """The store URL, checked and normalised (password kept: show it only masked)."""
        from retrieval_eval.store.url import store_url_for

        return store_url_for(
            None, self.connection_id, lambda conn_id: connection_store(self.get_connection(conn_id))
        )


class RetrievalEvalWebhookHook(_ConnectionHook):
    """The generic JSON webhook alert channel (``alerts: [{type: webhook, connection_id}]``)."""

    conn_name_attr = "retrieval_eval_webhook_conn_id"
    default_conn_name = "retrieval_eval_webhook"
    conn_type = WEBHOOK_CONN_TYPE
    hook_name = "Retrieval-eval webhook alerts"

    def get_conn(self) -> str:
        """The URL alerts are POSTed to (host, with the port when given)."""
        from retrieval_eval.airflow.alerts.webhook import webhook_url

        return webhook_url(self.get_connection(self.connection_id))

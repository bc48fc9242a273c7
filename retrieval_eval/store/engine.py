"""Engines for the two backends, and the translation of "cannot reach the database" errors.

SQLite: the parent folder is created, a busy timeout lets concurrent writers wait, foreign keys are
switched on, and every transaction starts with ``BEGIN IMMEDIATE`` (SQLAlchemy's documented recipe)
so two processes saving at once queue up instead of failing with "database is locked" when a
read lock would need upgrading. PostgreSQL: psycopg 3 with a connect timeout, so an unreachable
server fails in seconds rather than hanging.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import URL, Engine, create_engine
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from retrieval_eval.errors import StoreUnavailableError
from retrieval_eval.safety.redaction import MASK, redact
from retrieval_eval.store.url import mask_url

SQLITE_BUSY_TIMEOUT_S = 30
PG_CONNECT_TIMEOUT_S = 5


class StoreFailedError(StoreUnavailableError):
    """The database or its driver refused the operation (a bad URL option, a file that is not a
    database, a rejected row): exit 3, and the run is spooled, as for an unreachable store."""


def make_engine(url: URL) -> Engine:
    """An engine for a parsed, normalised store URL (see ``parse_store_url``)."""
    if url.get_backend_name() == "sqlite":
        return _sqlite_engine(url)
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)


def _sqlite_engine(url: URL) -> Engine:
    path = Path(url.database or "")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise StoreUnavailableError(
            f"cannot create the folder for the result store {mask_url(url)}: {exc.strerror}"
        ) from None
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # pysqlite's own BEGIN handling off; ours below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN IMMEDIATE")

    return engine


def reason(exc: BaseException, url: URL) -> str:
    """The first line of a driver error, with the password scrubbed should a driver echo it
    (whatever its length, and every registered secret in every form)."""
    orig = getattr(exc, "orig", None) or exc
    text = (str(orig).strip().splitlines() or [type(orig).__name__])[0]
    if url.password:
        text = text.replace(str(url.password), MASK)
    return redact(text)


@contextmanager
def unavailable_as_error(url: URL) -> Iterator[None]:
    """Turn every database or driver error into StoreUnavailableError (exit 3; a run being
    recorded is spooled) naming the masked URL and the driver's reason.

    Connection failures say the store cannot be reached; anything else the database or driver
    refused (an unknown URL option, a file that is not a database, a rejected row) is a
    :class:`StoreFailedError`. The original exception is not chained: its text or its
    traceback could carry the password.
    """
    try:
        yield
    except (OperationalError, InterfaceError) as exc:
        raise StoreUnavailableError(
            f"cannot reach the result store at {mask_url(url)}: {reason(exc, url)}"
        ) from None
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise StoreUnavailableError(
                f"lost the connection to the result store at {mask_url(url)}: {reason(exc, url)}"
            ) from None
        raise _failed(exc, url) from None
    except Exception as exc:
        if not _is_driver_error(exc):
            raise
        raise _failed(exc, url) from None


def _failed(exc: BaseException, url: URL) -> StoreFailedError:
    return StoreFailedError(f"cannot use the result store at {mask_url(url)}: {reason(exc, url)}")


def _is_driver_error(exc: BaseException) -> bool:
    """A DB-API error the driver raised without SQLAlchemy wrapping it (sqlite3's or psycopg's;
    psycopg is looked up only if imported: if it is not, it raised nothing)."""
    if isinstance(exc, sqlite3.Error):
        return True
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(exc, psycopg.Error)

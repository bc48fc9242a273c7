"""Engines for the two backends, and the translation of "cannot reach the database" errors.

SQLite: the parent folder is created, a busy timeout lets concurrent writers wait, foreign keys are
switched on, the file is put in WAL mode where it allows it (a network or read-only file keeps its
journal), so readers and one writer never block each other, and every transaction of a store that
writes starts with ``BEGIN IMMEDIATE`` (SQLAlchemy's documented recipe) so two processes saving at
once queue up instead of failing with "database is locked" when a read lock would need upgrading.
A read-only engine (the dashboard, the commands that only read) opens the file ``mode=ro`` and
begins deferred transactions: it never takes the write lock. In a folder it cannot write (a
read-only mount) a WAL file cannot get its ``-shm`` index, so it is opened ``immutable=1`` unless a
``-wal`` holds pages the file does not (immutable would skip them: see :func:`_read_only_uri`).
PostgreSQL: psycopg 3 with a connect
timeout, so an unreachable server fails in seconds rather than hanging.
"""

from __future__ import annotations

import os
import sqlite3
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
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


def make_engine(
    url: URL, *, read_only: bool = False, statement_timeout_s: float | None = None
) -> Engine:
    """An engine for a parsed, normalised store URL (see ``parse_store_url``); ``read_only``
    opens a SQLite file read-only with deferred transactions (PostgreSQL is not affected).
    ``statement_timeout_s`` ends a statement that runs longer (with its rows fetched), as
    :func:`statement_timed_out` tells: PostgreSQL's ``statement_timeout``, on SQLite a progress
    handler."""
    if url.get_backend_name() == "sqlite":
        engine = _sqlite_engine(url, read_only=read_only)
        if statement_timeout_s is not None:
            _sqlite_deadline(engine, statement_timeout_s)
        return engine
    connect_args: dict[str, Any] = {}
    if "connect_timeout" not in url.query:
        connect_args["connect_timeout"] = PG_CONNECT_TIMEOUT_S
    if statement_timeout_s is not None:  # after any options the URL gives
        given = url.query.get("options")
        given = given if isinstance(given, str) else " ".join(given or ())
        timeout = f"-c statement_timeout={max(1, round(statement_timeout_s * 1000))}"
        connect_args["options"] = f"{given} {timeout}".strip()
    return create_engine(url, connect_args=connect_args, pool_pre_ping=True)


def _sqlite_deadline(engine: Engine, timeout_s: float) -> None:
    """Interrupt a SQLite statement still running ``timeout_s`` after it started (its rows
    fetched included): the error is sqlite3's "interrupted"."""

    @event.listens_for(engine, "before_cursor_execute")
    def _deadline(connection: Any, *_args: Any) -> None:
        deadline = time.monotonic() + timeout_s
        dbapi = connection.connection.dbapi_connection
        dbapi.set_progress_handler(lambda: time.monotonic() > deadline, 1000)


def statement_timed_out(exc: BaseException) -> bool:
    """Whether a database error is a statement ended by ``statement_timeout_s``."""
    orig = getattr(exc, "orig", None) or exc
    if isinstance(orig, sqlite3.OperationalError):
        return str(orig) == "interrupted"
    psycopg = sys.modules.get("psycopg")
    return psycopg is not None and isinstance(orig, psycopg.errors.QueryCanceled)


def _sqlite_engine(url: URL, *, read_only: bool) -> Engine:
    path = Path(url.database or "")
    if read_only:

        def connect() -> sqlite3.Connection:
            return sqlite3.connect(
                _read_only_uri(path),
                uri=True,
                timeout=SQLITE_BUSY_TIMEOUT_S,
                check_same_thread=False,  # the pool hands a connection to one thread at a time
            )

        engine = create_engine(url, creator=connect)
    else:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreUnavailableError(
                f"cannot create the folder for the result store {mask_url(url)}: {exc.strerror}"
            ) from None
        engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_S})
    begin = "BEGIN" if read_only else "BEGIN IMMEDIATE"

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # pysqlite's own BEGIN handling off; ours below
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA foreign_keys=ON")
        if not read_only:
            _wal_if_possible(cursor)
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        connection.exec_driver_sql(begin)

    return engine


def _read_only_uri(path: Path) -> str:
    """The URI a reader opens ``path`` with: ``mode=ro``, plus ``immutable=1`` in a folder it
    cannot write, where SQLite could not create the ``-shm`` file a WAL reader needs.

    Immutable reads the main file only, so it is used only when no ``-wal`` holds pages: a
    ``-wal`` with its ``-shm`` is read ``mode=ro`` (SQLite maps the index read-only), and a
    ``-wal`` without one cannot be read at all from there: an error naming the file and the fix,
    never a read of the store without its newest rows.
    """
    uri = f"{path.as_uri()}?mode=ro"
    if os.access(path.parent, os.W_OK):
        return uri
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    if not _size(wal):
        return uri + "&immutable=1"
    if shm.exists():
        return uri
    raise sqlite3.OperationalError(
        f"{wal} holds changes not yet in {path.name} and its folder is read-only, so it cannot "
        f"be read from here: open the store once where the folder is writable (any "
        f"retrieval-eval command, or `sqlite3 {path} 'PRAGMA wal_checkpoint'`) to fold them in"
    )


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _wal_if_possible(cursor: sqlite3.Cursor) -> None:
    """Switch the file to WAL (persistent, a no-op once done). A file that cannot take it (on a
    network share, locked at this moment, not a database) keeps its journal: the next query
    reports whatever is really wrong with it."""
    with suppress(sqlite3.Error):
        cursor.execute("PRAGMA journal_mode=WAL")


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

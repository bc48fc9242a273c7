"""Reading stored runs from a SQLite store with the standard library: history, show, compare.

Importing SQLAlchemy takes ~0.2 s, more than all else these read-only commands do on a local
store. :func:`open_reader` serves a plain SQLite file that is already at this version's schema
revision (:data:`~retrieval_eval.store.names.HEAD`); for anything else (no file yet, an empty
or foreign file, another revision, a file sqlite3 cannot open, PostgreSQL) it returns None and
the caller opens a :class:`~retrieval_eval.store.Store` read-only
(:func:`~retrieval_eval.store.open_store_to_read`), which refuses or reports it. A reader
answers :meth:`history`, :meth:`get_run` and :meth:`retrievers_for` exactly as the Store does (``tests/store/test_reader.py`` compares them): the same rows, in the same
order, decoded as SQLAlchemy decodes them. Which columns are JSON, BOOLEAN or DATETIME is read
from the tables' declared types, i.e. from the migrations that created them. Every read runs
in one transaction, so a run never comes back without its questions. Runs are built by
:func:`~retrieval_eval.store.rows.stored_run`.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_eval.errors import StoreUnavailableError, UnknownNameError
from retrieval_eval.store.names import GRADER, HEAD, VERSION_TABLE, storable_run_id

if TYPE_CHECKING:
    from retrieval_eval.store.models import StoredRun

BUSY_TIMEOUT_S = 30  # as the SQLAlchemy engine's: wait for a writer rather than fail
_CHUNK = 500  # run ids per IN (...) list, as the Store's
_DECODERS: dict[str, Callable[[Any], Any]] = {
    "JSON": json.loads,
    "BOOLEAN": bool,
    "DATETIME": datetime.fromisoformat,  # stored naive (UTC); rows.stored_run sets the zone
}
_RUN_ORDER = "ORDER BY run_date DESC, id DESC"  # newest first, as the Store's _NEWEST


class SqliteReader:
    """A read-only view of a SQLite store at :data:`HEAD`; get one from :func:`open_reader`."""

    def __init__(self, connection: sqlite3.Connection, path: Path) -> None:
        self._connection = connection
        self.display_url = f"sqlite:///{path}"  # what mask_url renders for this URL
        self._decoders: dict[str, dict[str, Callable[[Any], Any]]] = {}

    def __repr__(self) -> str:
        return f"SqliteReader({self.display_url!r})"

    def __enter__(self) -> SqliteReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._connection.close()

    def get_run(self, run_id: int) -> StoredRun:
        runs = self._load("WHERE id = ?", (run_id,)) if storable_run_id(run_id) else []
        if not runs:
            raise UnknownNameError(f"no stored run with id {run_id} in {self.display_url}")
        return runs[0]

    def history(
        self,
        set_identifier: str,
        model_id: str,
        limit: int = 50,
        *,
        grader: str = GRADER,
        questions: bool = True,
    ) -> list[StoredRun]:
        """Recent runs of (set, retriever), newest first (as :meth:`Store.history`)."""
        return self._load(
            f"WHERE set_identifier = ? AND model_id = ? AND grader = ? {_RUN_ORDER} LIMIT ?",
            (set_identifier, model_id, grader, limit),
            questions=questions,
        )

    def history_rows(
        self, set_identifier: str, model_id: str, limit: int = 50, *, grader: str = GRADER
    ) -> list[dict[str, Any]]:
        """:meth:`history`'s ``eval_result`` rows as decoded dicts, newest first, without
        building a :class:`StoredRun` (pydantic and its models cost ``history`` ~0.1 s)."""
        with self._transaction() as cursor:
            return self._rows(
                cursor,
                "eval_result",
                f"WHERE set_identifier = ? AND model_id = ? AND grader = ? {_RUN_ORDER} LIMIT ?",
                (set_identifier, model_id, grader, limit),
            )

    def retrievers_for(self, set_identifier: str) -> list[str]:
        """Retriever identifiers with stored runs on a set (as :meth:`Store.retrievers_for`)."""
        with self._transaction() as cursor:
            cursor.execute(
                "SELECT DISTINCT model_id FROM eval_result WHERE grader = ? "
                "AND set_identifier = ? ORDER BY model_id",
                (GRADER, set_identifier),
            )
            return [row[0] for row in cursor.fetchall()]

    def stored_pairs(self) -> list[tuple[str, str]]:
        """Every (set, retriever) with stored runs (as :meth:`Store.stored_pairs`)."""
        with self._transaction() as cursor:
            cursor.execute(
                "SELECT DISTINCT set_identifier, model_id FROM eval_result WHERE grader = ? "
                "ORDER BY set_identifier, model_id",
                (GRADER,),
            )
            return [(row[0], row[1]) for row in cursor.fetchall()]

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Cursor]:
        """One read transaction; sqlite3 errors become StoreUnavailableError (exit 3)."""
        cursor = self._connection.cursor()
        try:
            cursor.execute("BEGIN")
            try:
                yield cursor
            finally:
                cursor.execute("COMMIT")
        except sqlite3.Error as exc:
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise StoreUnavailableError(
                f"cannot reach the result store at {self.display_url}: {reason}"
            ) from None
        finally:
            cursor.close()

    def _rows(self, cursor: sqlite3.Cursor, table: str, where: str, params: Any) -> list[dict]:
        decoders = self._decoders.get(table)
        if decoders is None:
            cursor.execute(f"PRAGMA table_info({table})")
            declared = {row[1]: str(row[2]).upper() for row in cursor.fetchall()}
            decoders = {n: _DECODERS[t] for n, t in declared.items() if t in _DECODERS}
            self._decoders[table] = decoders
        cursor.execute(f"SELECT * FROM {table} {where}", params)
        names = [column[0] for column in cursor.description]
        rows = [dict(zip(names, values, strict=True)) for values in cursor.fetchall()]
        for row in rows:
            for name, decode in decoders.items():
                if row[name] is not None:
                    row[name] = decode(row[name])
        return rows

    def _children(self, cursor: sqlite3.Cursor, table: str, ids: list[int]) -> dict[int, list]:
        found: dict[int, list[dict]] = {run_id: [] for run_id in ids}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            where = f"WHERE run_id IN ({', '.join('?' * len(chunk))})"
            for row in self._rows(cursor, table, where, chunk):
                found[row["run_id"]].append(row)
        return found

    def _load(self, where: str, params: Any, *, questions: bool = True) -> list[StoredRun]:
        from retrieval_eval.store.rows import stored_run

        with self._transaction() as cursor:
            runs = self._rows(cursor, "eval_result", where, params)
            ids = [row["id"] for row in runs]
            per_run = self._children(cursor, "eval_result_question", ids if questions else [])
            slices = self._children(cursor, "eval_result_slice", ids)
        return [stored_run(row, per_run.get(row["id"], []), slices[row["id"]]) for row in runs]


def open_reader(path: Path) -> SqliteReader | None:
    """A reader for the SQLite store at ``path``, or None when a Store must handle it.

    None: the file does not exist, sqlite3 cannot read it, or its schema is not at
    :data:`HEAD` (empty, older, newer): :func:`~retrieval_eval.store.open_store_to_read` then
    says there is no store, refuses the revision or reports the error (it creates nothing).
    """
    if not path.is_file():
        return None
    try:
        # read-only: a reader never creates a file, takes a write lock or changes anything
        connection = sqlite3.connect(
            f"{path.as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None
        )
    except sqlite3.Error:
        return None
    try:
        versions = connection.execute(f"SELECT version_num FROM {VERSION_TABLE}").fetchall()
    except sqlite3.Error:
        versions = []  # no version table, or not a database
    if versions != [(HEAD,)]:
        connection.close()
        return None
    return SqliteReader(connection, path)

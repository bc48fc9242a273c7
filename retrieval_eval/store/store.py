"""The result store: one engine over SQLite or PostgreSQL, its schema, its transactions, and one
repository per concept over them.

:class:`Store` opens the engine, checks or creates the schema, and gives the one way to a
connection, :meth:`Store.transaction`: a transaction that commits when its block ends, rolls back
when it raises, and turns every database or driver error (connection failures, an unknown URL
option, a file that is not a database, a refused row) into StoreUnavailableError (exit 3; a run
being recorded is spooled) naming the URL with its password masked. Every repository call opens
its own short transaction, so one Store may be shared by threads.

The repositories, attributes of the store: ``store.runs`` (:mod:`~retrieval_eval.store.runs`),
``store.alerts`` (:mod:`~retrieval_eval.store.alerts`), ``store.replays``
(:mod:`~retrieval_eval.store.replays`), ``store.questions``
(:mod:`~retrieval_eval.store.questions`), ``store.judgments``
(:mod:`~retrieval_eval.store.judgments`) and ``store.judges``
(:mod:`~retrieval_eval.store.judges`). Each is imported when first used.

:meth:`Store.serialised` holds a lock on a key until the transaction ends: on PostgreSQL a
transaction-level advisory lock (``pg_advisory_xact_lock``) on a stable 64-bit hash of the key,
on SQLite the database's write lock, which every transaction takes with ``BEGIN IMMEDIATE``
(see :mod:`retrieval_eval.store.engine`; the busy timeout makes the others wait). Judging a run
(:func:`retrieval_eval.workflows.recording.judged_save`) takes it on (set, retriever, grader),
so runs of one key recorded at the same time queue up and form a chain.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select

from retrieval_eval.errors import NoStoreError, StoreSchemaError, StoreTooNewError
from retrieval_eval.store import migrate
from retrieval_eval.store.engine import make_engine, unavailable_as_error
from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.names import CREATE_HINT, KNOWN_REVISIONS, newer_revision, no_store_file
from retrieval_eval.store.schema import GRADER
from retrieval_eval.store.url import mask_url, parse_store_url

if TYPE_CHECKING:
    from retrieval_eval.store.alerts import Alerts
    from retrieval_eval.store.judges import Judges
    from retrieval_eval.store.judgments import Judgments
    from retrieval_eval.store.questions import Questions
    from retrieval_eval.store.replays import Replays
    from retrieval_eval.store.runs import Runs

__all__ = ["Store", "StoreSchemaError", "open_existing_store", "open_store", "open_store_to_read"]


class Store:
    """A result store at ``url`` (``sqlite:///path`` or ``postgresql://user@host:port/db``).

    Use :func:`open_store` rather than the constructor: it also creates the schema of an empty
    database and checks the revision of an existing one. ``read_only`` opens a SQLite file
    read-only with deferred transactions (:func:`open_store_to_read`, the dashboard).
    """

    def __init__(self, url: str, *, read_only: bool = False) -> None:
        self._url = parse_store_url(url)
        self.display_url = mask_url(self._url)
        self.engine = make_engine(self._url, read_only=read_only)

    def __repr__(self) -> str:
        return f"Store({self.display_url!r})"

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.release()

    def release(self) -> None:
        """Close the connections the pool holds (the next call opens one): a caller that works
        a long while without the store (a replay's retrievers) holds none open meanwhile."""
        self.engine.dispose()

    def _guard(self) -> Any:
        return unavailable_as_error(self._url)

    @contextmanager
    def transaction(self) -> Iterator[Connection]:
        """A connection in a transaction: committed when the block ends, rolled back when it
        raises. The one way to a connection: a database or driver error in the block (or in
        connecting) is StoreUnavailableError naming the masked URL, never the password."""
        with self._guard(), self.engine.begin() as conn:
            yield conn

    @staticmethod
    def serialised(conn: Connection, *key: str) -> None:
        """Hold a lock on ``key`` until ``conn``'s transaction ends: whoever serialises the same
        key waits for it.

        SQLite: nothing more to do, every transaction starts with ``BEGIN IMMEDIATE`` and so
        holds the database's write lock. PostgreSQL: a transaction-level advisory lock on a
        stable 64-bit hash of the key (not Python's ``hash``, which differs between processes).
        """
        if conn.dialect.name != "postgresql":
            return
        text = "\x1f".join(("retrieval_eval.judging", *key)).encode()
        lock_id = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), signed=True)
        conn.execute(select(func.pg_advisory_xact_lock(lock_id)))

    # -- schema ---------------------------------------------------------------------------

    def upgrade(self) -> None:
        """Create or upgrade the schema to the newest revision; idempotent. A store a newer
        version migrated is refused (:class:`StoreTooNewError`) before Alembic touches it."""
        current = self.revision()
        if current is not None and current not in KNOWN_REVISIONS:
            raise self.schema_error(current)
        with self._guard():
            migrate.upgrade(self.engine)

    def revision(self) -> str | None:
        """The schema revision stamped in the database (None: never initialised)."""
        with self.transaction() as conn:
            return migrate.current_revision(conn)

    def ensure_schema(self) -> None:
        """Create the schema in an empty database; refuse one at another revision.

        The common case, a store at this version's revision, is one query on the version table
        and never loads Alembic (see :mod:`retrieval_eval.store.migrate`).
        """
        current = self.revision()
        if current == migrate.HEAD:
            return
        if current is None:
            self.upgrade()
            return
        raise self.schema_error(current)

    def check_readable(self) -> None:
        """What :meth:`ensure_schema` checks, without creating anything: a database without
        the tables is :class:`NoStoreError`, another revision :class:`StoreSchemaError`."""
        current = self.revision()
        if current is None:
            raise NoStoreError(
                f"the result store at {self.display_url} holds no retrieval-eval tables yet: "
                f"{CREATE_HINT}"
            )
        if current != migrate.HEAD:
            raise self.schema_error(current)

    def schema_error(self, current: str) -> StoreSchemaError:
        """What a store at revision ``current`` (not :data:`HEAD`) is told: upgrade the schema
        when it is older, the package when a newer version migrated it."""
        if current not in KNOWN_REVISIONS:
            return StoreTooNewError(newer_revision(self.display_url, current))
        return StoreSchemaError(
            f"the result store at {self.display_url} has schema revision {current!r}, this "
            f"version of retrieval-eval uses {migrate.HEAD!r}: run `retrieval-eval db upgrade` "
            "(or upgrade retrieval-eval if the store was written by a newer version)"
        )

    # -- repositories ---------------------------------------------------------------------

    @cached_property
    def runs(self) -> Runs:
        """Labelled runs: save, get, baselines, history, summaries, prune, accept."""
        from retrieval_eval.store.runs import Runs

        return Runs(self)

    @cached_property
    def alerts(self) -> Alerts:
        """Alert markers: claim, sent, release, state, last kind."""
        from retrieval_eval.store.alerts import Alerts

        return Alerts(self)

    @cached_property
    def replays(self) -> Replays:
        """Query samples and replays of them, with their rankings."""
        from retrieval_eval.store.replays import Replays

        return Replays(self)

    @cached_property
    def questions(self) -> Questions:
        """A stored run's questions, filtered, ordered and paged in SQL."""
        from retrieval_eval.store.questions import Questions

        return Questions(self)

    @cached_property
    def judgments(self) -> Judgments:
        """Relevance judgments of people (imported files, the review queue) and model judges."""
        from retrieval_eval.store.judgments import Judgments

        return Judgments(self)

    @cached_property
    def judges(self) -> Judges:
        """Model judges: their rows, the answers' cache, their calibrations."""
        from retrieval_eval.store.judges import Judges

        return Judges(self)

    # -- the documented delegates (``store.runs`` holds the rest) ----------------------------

    def history(
        self,
        set_identifier: str,
        model_id: str,
        limit: int = 50,
        *,
        grader: str = GRADER,
        questions: bool = True,
    ) -> list[StoredRun]:
        """:meth:`Runs.history <retrieval_eval.store.runs.Runs.history>`."""
        return self.runs.history(
            set_identifier, model_id, limit, grader=grader, questions=questions
        )

    def get_run(self, run_id: int, *, questions: bool = True) -> StoredRun:
        """:meth:`Runs.get <retrieval_eval.store.runs.Runs.get>`."""
        return self.runs.get(run_id, questions=questions)

    def find_baseline(
        self,
        set_identifier: str,
        model_id: str,
        labels_fingerprint: str,
        grader: str = GRADER,
        *,
        before: datetime | None = None,
    ) -> StoredRun | None:
        """:meth:`Runs.find_baseline <retrieval_eval.store.runs.Runs.find_baseline>`."""
        return self.runs.find_baseline(
            set_identifier, model_id, labels_fingerprint, grader, before=before
        )

    def latest_runs(self, *, questions: bool = True) -> list[StoredRun]:
        """:meth:`Runs.latest <retrieval_eval.store.runs.Runs.latest>`."""
        return self.runs.latest(questions=questions)

    def prune(self, older_than_days: int) -> int:
        """How many runs :meth:`Runs.prune <retrieval_eval.store.runs.Runs.prune>` deleted."""
        return self.runs.prune(older_than_days).runs


def open_store(url: str) -> Store:
    """Open the store at ``url``, creating the schema when the database is empty.

    Raises StoreUnavailableError (exit 3, password masked) when the database cannot be reached,
    StoreSchemaError when it holds another schema revision.
    """
    store = Store(url)
    try:
        store.ensure_schema()
    except BaseException:
        store.close()
        raise
    return store


def open_store_to_read(url: str) -> Store:
    """Open the store at ``url`` for a command that only reads (history, show, compare, report,
    runs export): nothing is created, neither a SQLite file (nor its folder) nor a schema, and a
    SQLite file is opened read-only (deferred transactions: a reader never holds the write lock).

    Raises NoStoreError (exit 2) naming the file or the masked URL when there is no store yet,
    StoreSchemaError for another revision, StoreUnavailableError when it cannot be reached.
    """
    return open_existing_store(url, read_only=True)


def open_existing_store(url: str, *, read_only: bool = False) -> Store:
    """:func:`open_store_to_read` for a command that changes stored runs (prune, baseline
    accept): the store must exist already, and nothing is created, but it can be written."""
    parsed = parse_store_url(url)
    if parsed.get_backend_name() == "sqlite" and not Path(parsed.database or "").is_file():
        raise NoStoreError(no_store_file(parsed.database))
    store = Store(url, read_only=read_only)
    try:
        store.check_readable()
    except BaseException:
        store.close()
        raise
    return store

"""The result store: save runs, find baselines, read history, prune. SQLite or PostgreSQL.

Every method opens its own short transaction, so one Store may be shared by threads. Every
database or driver error (connection failures, an unknown URL option, a file that is not a
database, a refused row) raises StoreUnavailableError (exit 3; a run being recorded is spooled)
naming the URL with its password masked.

Judging is serialised: :meth:`Store.judged_save` chooses a run's baseline, judges it and saves it
in one transaction that first takes a lock on (set, retriever, grader): on PostgreSQL a
transaction-level advisory lock (``pg_advisory_xact_lock``) on a stable 64-bit hash of the key,
on SQLite the database's write lock, which every transaction takes with ``BEGIN IMMEDIATE``
(see :mod:`retrieval_eval.store.engine`; the busy timeout makes the others wait). So runs of one
key recorded at the same time queue up and form a chain: one ``baseline``, and each later run
judged against the newest good run committed before it, never two runs judged against the same
stale baseline. The baseline may be any run that started before the judged run finished: a run
scored long ago and saved late (a replayed spool file) is not compared with a later run.

Only rows of the ``retrieval_hit_rate`` grader are read, pruned or counted as baselines: the
``eval_result`` table is shared with other graders whose rows this tool leaves alone.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    delete,
    false,
    func,
    insert,
    or_,
    select,
    true,
    update,
)
from sqlalchemy.exc import IntegrityError

from retrieval_eval.errors import (
    InvalidInputError,
    NoStoreError,
    StoreSchemaError,
    StoreTooNewError,
    UnknownNameError,
)
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.store import migrate
from retrieval_eval.store.engine import make_engine, unavailable_as_error
from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.names import (
    CREATE_HINT,
    KNOWN_REVISIONS,
    newer_revision,
    no_store_file,
    storable_run_id,
)
from retrieval_eval.store.rows import depth_rows, question_rows, result_row, slice_rows, stored_run
from retrieval_eval.store.schema import (
    GRADER,
    eval_alert,
    eval_result,
    eval_result_depth,
    eval_result_question,
    eval_result_slice,
)
from retrieval_eval.store.summary import RunSummary
from retrieval_eval.store.url import mask_url, parse_store_url
from retrieval_eval.verdicts.models import Verdict

_CHUNK = 500  # ids per IN (...) list: far below SQLite's and PostgreSQL's parameter limits
_NEWEST = (eval_result.c.run_date.desc(), eval_result.c.id.desc())


def _chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


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
        with self._guard(), self.engine.connect() as conn:
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

    # -- writing --------------------------------------------------------------------------

    def save(self, result: RunResult, verdict: Verdict | None = None) -> int:
        """Save a run (summary, questions, slices) in one transaction; return its id.

        Idempotent on ``result.run_key``: saving the same run again returns the existing id, also
        when two processes race to save it.
        """
        with self._guard():
            try:
                with self.engine.begin() as conn:
                    existing = self._id_for_key(conn, result.run_key)
                    if existing is not None:
                        return existing
                    return _insert_run(conn, result, verdict)
            except IntegrityError:
                # another writer saved the same run_key between our check and our insert
                with self.engine.connect() as conn:
                    existing = self._id_for_key(conn, result.run_key)
                if existing is None:
                    raise
                return existing

    def judged_save(
        self,
        result: RunResult,
        judge: Callable[[StoredRun | None, bool], Verdict],
        *,
        baseline_run_id: int | None = None,
        save: bool = True,
    ) -> tuple[int | None, Verdict]:
        """Choose ``result``'s baseline, judge it and save it in ONE transaction, serialised per
        (set, retriever, grader) with every other judged save of that key; return the stored id
        (None with ``save=False``) and the verdict.

        ``judge(baseline, comparable)`` builds the verdict: ``baseline`` is the run pinned by
        ``baseline_run_id`` (UnknownNameError if there is none) or :meth:`find_baseline`'s
        choice among the runs that started before ``result`` finished; ``comparable`` is False
        when there is no baseline but valid runs under other labels exist. A run saved before
        (same run key) is not judged again: its id and stored verdict come back.
        """
        key = (result.set_identifier, result.retriever, GRADER)
        with self._guard(), self.engine.begin() as conn:
            self._serialise(conn, *key)
            stored = _load_on(conn, self._by_key(result.run_key), questions=False)
            if stored:  # saved before: same id, same verdict
                return stored[0].id, stored[0].verdict or judge(None, True)
            comparable = True
            if baseline_run_id is not None:
                baseline = _first(_load_on(conn, self._by_id(baseline_run_id)))
                if baseline is None:
                    raise self._unknown_run(baseline_run_id)
            else:
                query = self._baseline_query(*key[:2], result.labels_fingerprint, GRADER)
                baseline = _first(
                    _load_on(conn, query.where(eval_result.c.run_date < result.finished_at))
                )
                if baseline is None:
                    fingerprints = set(conn.execute(self._fingerprints_query(*key)).scalars())
                    comparable = not fingerprints - {result.labels_fingerprint}
            verdict = judge(baseline, comparable)
            run_id = _insert_run(conn, result, verdict) if save else None
        return run_id, verdict

    def _serialise(self, conn: Connection, *key: str) -> None:
        """Hold a lock on ``key`` until ``conn``'s transaction ends (see the module docstring).

        SQLite: nothing more to do, every transaction starts with ``BEGIN IMMEDIATE`` and so
        holds the database's write lock. PostgreSQL: a transaction-level advisory lock on a
        stable 64-bit hash of the key (not Python's ``hash``, which differs between processes).
        """
        if conn.dialect.name != "postgresql":
            return
        text = "\x1f".join(("retrieval_eval.judging", *key)).encode()
        lock_id = int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), signed=True)
        conn.execute(select(func.pg_advisory_xact_lock(lock_id)))

    def claim_alert(
        self, run_key: str, channel: str, kind: str, *, expire_after_s: float | None = None
    ) -> bool:
        """Claim the right to send ``run_key``'s alert through ``channel``; False if taken.

        The claim is a row in ``eval_alert`` whose unique (run key, channel) lets exactly one
        caller win, across retries, re-runs of cleared tasks and racing processes. Follow a won
        claim with :meth:`alert_sent` once delivered, or :meth:`release_alert` when sending
        failed, so a retry may try again. With ``expire_after_s``, a claim still ``sending``
        that much later (its sender was killed mid-send) is taken over, by one caller only; a
        ``sent`` one never is.
        """
        now = datetime.now(UTC)
        row = {"run_key": run_key, "channel": channel, "kind": kind, "state": "sending"}
        with self._guard():
            try:
                with self.engine.begin() as conn:
                    conn.execute(insert(eval_alert).values(**row, updated_at=now))
            except IntegrityError:
                if expire_after_s is None:
                    return False
                with self.engine.begin() as conn:
                    taken = conn.execute(
                        update(eval_alert)
                        .where(
                            eval_alert.c.run_key == run_key,
                            eval_alert.c.channel == channel,
                            eval_alert.c.state == "sending",
                            eval_alert.c.updated_at < now - timedelta(seconds=expire_after_s),
                        )
                        .values(kind=kind, updated_at=now)
                    )
                return taken.rowcount == 1
        return True

    def alert_sent(self, run_key: str, channel: str) -> None:
        """Mark a claimed alert delivered."""
        with self._guard(), self.engine.begin() as conn:
            conn.execute(
                update(eval_alert)
                .where(eval_alert.c.run_key == run_key, eval_alert.c.channel == channel)
                .values(state="sent", updated_at=datetime.now(UTC))
            )

    def release_alert(self, run_key: str, channel: str) -> None:
        """Drop a claim whose message was not delivered (the next attempt may send it)."""
        with self._guard(), self.engine.begin() as conn:
            conn.execute(
                delete(eval_alert).where(
                    eval_alert.c.run_key == run_key, eval_alert.c.channel == channel
                )
            )

    def alert_state(self, run_key: str, channel: str) -> str | None:
        """``sending``, ``sent`` or None (never claimed) for a run's alert on a channel."""
        with self._guard(), self.engine.connect() as conn:
            state = conn.execute(
                select(eval_alert.c.state).where(
                    eval_alert.c.run_key == run_key, eval_alert.c.channel == channel
                )
            ).scalar()
        return None if state is None else str(state)

    def last_alert_kind(
        self,
        set_identifier: str,
        retriever: str,
        channel: str,
        kinds: Sequence[str],
        *,
        before_run_key: str,
    ) -> str | None:
        """The kind (one of ``kinds``) of the last alert ``sent`` on ``channel`` for a stored run
        of the set and retriever older than the run ``before_run_key`` (all, if that run is not
        stored); None if there is none. Alerts follow their runs: a later run has a larger id."""
        pair = (
            eval_result.c.grader == GRADER,
            eval_result.c.set_identifier == set_identifier,
            eval_result.c.model_id == retriever,
        )
        with self._guard(), self.engine.connect() as conn:
            current = conn.execute(
                select(eval_result.c.id).where(eval_result.c.run_key == before_run_key)
            ).scalar()
            query = (
                select(eval_alert.c.kind)
                .join(eval_result, eval_result.c.run_key == eval_alert.c.run_key)
                .where(
                    *pair,
                    eval_alert.c.channel == channel,
                    eval_alert.c.state == "sent",
                    eval_alert.c.kind.in_(list(kinds)),
                    eval_alert.c.run_key != before_run_key,
                )
                .order_by(eval_result.c.id.desc())
                .limit(1)
            )
            if current is not None:
                query = query.where(eval_result.c.id < current)
            kind = conn.execute(query).scalar()
        return None if kind is None else str(kind)

    def accept_baseline(self, run_id: int) -> None:
        """Accept a run (regressed, or refused for dead labels) as a baseline, so later runs
        compare against it."""
        run = self.get_run(run_id)
        if run.status != "valid":
            raise InvalidInputError(
                f"run {run_id} is invalid (too many retriever errors) and cannot be a baseline"
            )
        with self._guard(), self.engine.begin() as conn:
            conn.execute(
                update(eval_result).where(eval_result.c.id == run_id).values(accepted_baseline=True)
            )

    def prune(self, older_than_days: int) -> int:
        """Delete runs older than ``older_than_days`` days; return how many were deleted.

        The current baseline of every (set, retriever, labels fingerprint) key is kept whatever
        its age, so pruning never turns the next run into a "first run". Replays older than the
        cutoff go in the same transaction, but the newest of each series (:attr:`pruned_replays`
        says how many). Judgments (the ``judgment`` table) are labels, not runs: never pruned.
        """
        if older_than_days < 0:
            raise InvalidInputError(
                f"--older-than must be zero or more days, got {older_than_days}"
            )
        cutoff = datetime.now(UTC) - timedelta(days=older_than_days)
        with self._guard(), self.engine.begin() as conn:
            keys = conn.execute(
                select(
                    eval_result.c.set_identifier,
                    eval_result.c.model_id,
                    eval_result.c.labels_fingerprint,
                )
                .where(eval_result.c.grader == GRADER)
                .distinct()
            ).all()
            protected = set()
            for set_identifier, model_id, fingerprint in keys:
                query = self._baseline_query(set_identifier, model_id, fingerprint, GRADER)
                baseline_id = conn.execute(query.with_only_columns(eval_result.c.id)).scalar()
                if baseline_id is not None:
                    protected.add(baseline_id)
            doomed = [
                run_id
                for run_id in conn.execute(
                    select(eval_result.c.id).where(
                        eval_result.c.grader == GRADER, eval_result.c.run_date < cutoff
                    )
                ).scalars()
                if run_id not in protected
            ]
            for chunk in _chunks(doomed):
                conn.execute(
                    delete(eval_result_question).where(eval_result_question.c.run_id.in_(chunk))
                )
                conn.execute(delete(eval_result_slice).where(eval_result_slice.c.run_id.in_(chunk)))
                conn.execute(delete(eval_result_depth).where(eval_result_depth.c.run_id.in_(chunk)))
                conn.execute(
                    update(eval_result)
                    .where(eval_result.c.baseline_run_id.in_(chunk))
                    .values(baseline_run_id=None)
                )
                conn.execute(delete(eval_result).where(eval_result.c.id.in_(chunk)))
            from retrieval_eval.store.replays import prune_replays

            self.pruned_replays = prune_replays(conn, cutoff)
            return len(doomed)

    # -- reading --------------------------------------------------------------------------

    def get_run(self, run_id: int, *, questions: bool = True) -> StoredRun:
        """The stored run ``run_id`` (UnknownNameError if there is none); ``questions=False``
        as in :meth:`history` (:mod:`retrieval_eval.store.questions` reads them a page at a
        time)."""
        run = _first(self._load(self._by_id(run_id), questions=questions))
        if run is None:
            raise self._unknown_run(run_id)
        return run

    def get_run_by_key(self, run_key: str) -> StoredRun | None:
        return _first(self._load(self._by_key(run_key)))

    def find_baseline(
        self,
        set_identifier: str,
        model_id: str,
        labels_fingerprint: str,
        grader: str = GRADER,
        *,
        before: datetime | None = None,
    ) -> StoredRun | None:
        """The baseline for a key: the newest valid run with the same labels fingerprint that was
        neither a regression nor refused as a baseline (dead labels), unless it was accepted. ``before`` limits it to runs that started
        earlier (:meth:`judged_save` passes the judged run's end: a replayed spooled run is not
        compared with a later one).
        """
        query = self._baseline_query(set_identifier, model_id, labels_fingerprint, grader)
        if before is not None:
            query = query.where(eval_result.c.run_date < before)
        return _first(self._load(query))

    def history(
        self,
        set_identifier: str,
        model_id: str,
        limit: int = 50,
        *,
        grader: str = GRADER,
        questions: bool = True,
    ) -> list[StoredRun]:
        """Recent runs of (set, retriever), newest first.

        ``questions=False`` skips the per-question rows (``result.questions`` is then empty),
        which keeps listings cheap on large sets.
        """
        return self._load(
            select(eval_result)
            .where(*self._key(set_identifier, model_id, grader))
            .order_by(*_NEWEST)
            .limit(limit),
            questions=questions,
        )

    def latest_runs(self, *, questions: bool = True) -> list[StoredRun]:
        """The newest run of every (set, retriever) pair, ordered by set then retriever.

        ``questions=False`` as in :meth:`history`.
        """
        return self._load(self._newest_per_pair(1), questions=questions)

    def summaries(
        self,
        set_identifier: str | None = None,
        model_id: str | None = None,
        limit: int = 50,
        *,
        slices: bool = False,
    ) -> list[RunSummary]:
        """The ``limit`` newest runs of (set, retriever), or of every pair when neither is
        given, as :class:`RunSummary` (no questions read): newest first within a pair, pairs by
        set then retriever. ``slices`` fills each summary's per-form and per-class figures."""
        if (set_identifier is None) != (model_id is None):
            raise ValueError("summaries takes both a set and a retriever, or neither")
        if set_identifier is not None and model_id is not None:
            runs = self.history(set_identifier, model_id, limit, questions=False)
        else:
            runs = self._load(self._newest_per_pair(limit), questions=False)
        return [RunSummary.of(run, slices=slices) for run in runs]

    def runs_of_set(
        self,
        set_identifier: str,
        *,
        ids: Sequence[int] | None = None,
        since: datetime | None = None,
    ) -> list[StoredRun]:
        """The stored runs of a set with their questions, oldest first (what ``sets rejudge``
        scores again): those ``ids`` name (UnknownNameError for one not stored, InvalidInputError
        for one of another set), else every run, or those started at ``since`` or later."""
        query = select(eval_result).where(
            eval_result.c.grader == GRADER, eval_result.c.set_identifier == set_identifier
        )
        if since is not None:
            query = query.where(eval_result.c.run_date >= since)
        if ids is not None:
            wanted = [i for i in dict.fromkeys(ids) if storable_run_id(i)]
            found = self._load(select(eval_result).where(eval_result.c.id.in_(wanted or [0])))
            known = {run.id: run for run in found}
            for run_id in ids:
                run = known.get(run_id)
                if run is None:
                    raise self._unknown_run(run_id)
                if run.result.set_identifier != set_identifier or run.grader != GRADER:
                    raise InvalidInputError(
                        f"run {run_id} is a run of set {run.result.set_identifier!r}, not of "
                        f"{set_identifier!r}: name runs of {set_identifier!r} in --runs"
                    )
            runs = list(known.values())
        else:
            runs = self._load(query)
        return sorted(runs, key=lambda run: (run.run_date, run.id))

    def run_id_for_key(self, run_key: str) -> int | None:
        """The id of the run stored under ``run_key``, or None."""
        with self._guard(), self.engine.connect() as conn:
            return self._id_for_key(conn, run_key)

    def fingerprints(self, set_identifier: str, model_id: str, grader: str = GRADER) -> set[str]:
        """The labels fingerprints of the valid runs stored for a key."""
        with self._guard(), self.engine.connect() as conn:
            rows = conn.execute(self._fingerprints_query(set_identifier, model_id, grader))
            return set(rows.scalars())

    def retrievers_for(self, set_identifier: str) -> list[str]:
        """Retriever identifiers with stored runs on a set (for "unknown retriever" messages)."""
        with self._guard(), self.engine.connect() as conn:
            rows = conn.execute(
                select(eval_result.c.model_id)
                .where(eval_result.c.grader == GRADER)
                .where(eval_result.c.set_identifier == set_identifier)
                .distinct()
                .order_by(eval_result.c.model_id)
            ).scalars()
            return list(rows)

    def stored_pairs(self) -> list[tuple[str, str]]:
        """Every (set, retriever) with stored runs, sorted: one query, for "did you mean"."""
        with self._guard(), self.engine.connect() as conn:
            rows = conn.execute(
                select(eval_result.c.set_identifier, eval_result.c.model_id)
                .where(eval_result.c.grader == GRADER)
                .distinct()
                .order_by(eval_result.c.set_identifier, eval_result.c.model_id)
            )
            return [(row[0], row[1]) for row in rows]

    # -- helpers --------------------------------------------------------------------------

    @staticmethod
    def _key(set_identifier: str, model_id: str, grader: str) -> list[ColumnElement[bool]]:
        return [
            eval_result.c.set_identifier == set_identifier,
            eval_result.c.model_id == model_id,
            eval_result.c.grader == grader,
        ]

    @staticmethod
    def _newest_per_pair(limit: int) -> Select[Any]:
        """The ``limit`` newest runs of every (set, retriever) pair, ordered by set, retriever,
        then newest first: one query, ranked by a window function."""
        pair = (eval_result.c.set_identifier, eval_result.c.model_id)
        rank = func.row_number().over(partition_by=pair, order_by=_NEWEST).label("rank")
        ranked = select(eval_result.c.id, rank).where(eval_result.c.grader == GRADER).subquery()
        newest = select(ranked.c.id).where(ranked.c.rank <= limit)
        return select(eval_result).where(eval_result.c.id.in_(newest)).order_by(*pair, *_NEWEST)

    @staticmethod
    def _by_id(run_id: int) -> Select[Any]:
        # an id outside the INTEGER column's range matches nothing (PostgreSQL would raise)
        found = eval_result.c.id == run_id if storable_run_id(run_id) else false()
        return select(eval_result).where(found)

    @staticmethod
    def _by_key(run_key: str) -> Select[Any]:
        return select(eval_result).where(eval_result.c.run_key == run_key)

    def _unknown_run(self, run_id: int) -> UnknownNameError:
        return UnknownNameError(f"no stored run with id {run_id} in {self.display_url}")

    def _fingerprints_query(self, set_identifier: str, model_id: str, grader: str) -> Select[Any]:
        return (
            select(eval_result.c.labels_fingerprint)
            .where(*self._key(set_identifier, model_id, grader))
            .where(eval_result.c.status == "valid", eval_result.c.labels_fingerprint.is_not(None))
            .distinct()
        )

    def _baseline_query(
        self, set_identifier: str, model_id: str, fingerprint: str | None, grader: str
    ) -> Select[Any]:
        return (
            select(eval_result)
            .where(*self._key(set_identifier, model_id, grader))
            .where(eval_result.c.labels_fingerprint == fingerprint)
            .where(eval_result.c.status == "valid")
            .where(
                or_(
                    and_(eval_result.c.is_regression == false(), _not_refused()),
                    eval_result.c.accepted_baseline == true(),
                )
            )
            .order_by(*_NEWEST)
            .limit(1)
        )

    @staticmethod
    def _id_for_key(conn: Connection, run_key: str) -> int | None:
        found = conn.execute(
            select(eval_result.c.id).where(eval_result.c.run_key == run_key)
        ).scalar()
        return None if found is None else int(found)

    def _load(self, query: Select[Any], *, questions: bool = True) -> list[StoredRun]:
        with self._guard(), self.engine.connect() as conn:
            return _load_on(conn, query, questions=questions)


def _load_on(conn: Connection, query: Select[Any], *, questions: bool = True) -> list[StoredRun]:
    """Run a query over eval_result and attach each run's slices, depths (and questions)."""
    rows = conn.execute(query).mappings().all()
    ids = [row["id"] for row in rows]
    per_run = _children(conn, eval_result_question, ids if questions else [])
    slices = _children(conn, eval_result_slice, ids)
    depths = _children(conn, eval_result_depth, ids)
    return [
        stored_run(dict(row), per_run[row["id"]], slices[row["id"]], depths[row["id"]])
        for row in rows
    ]


def _not_refused() -> ColumnElement[bool]:
    """The run's verdict did not refuse it as a baseline (``baseline_refused``, in its details:
    a run whose index lost labelled documents); runs stored without the flag were not."""
    flag = eval_result.c.details[("verdict", "baseline_refused")].as_boolean()
    return func.coalesce(flag, false()) == false()


def _first(runs: list[StoredRun]) -> StoredRun | None:
    return runs[0] if runs else None


def _insert_run(conn: Connection, result: RunResult, verdict: Verdict | None) -> int:
    """Insert a run's summary, questions, slices and hits at every gated depth on ``conn``
    (the caller's transaction)."""
    run_id = inserted_id(conn, eval_result, result_row(result, verdict))
    conn.execute(insert(eval_result_question), question_rows(result, run_id))
    slices = slice_rows(result, run_id)
    if slices:
        conn.execute(insert(eval_result_slice), slices)
    conn.execute(insert(eval_result_depth), depth_rows(result, run_id))
    return run_id


def inserted_id(conn: Connection, table: Any, values: Mapping[str, Any]) -> int:
    """Insert one row of ``values`` into ``table`` (on the caller's transaction) and return the
    id the database gave it: how every table with an ``id`` key is written."""
    return int(conn.execute(insert(table).values(**values).returning(table.c.id)).scalar_one())


def _children(conn: Connection, table: Any, ids: Sequence[int]) -> dict[int, list[Any]]:
    found: dict[int, list[Any]] = defaultdict(list)
    for chunk in _chunks(ids):
        for row in conn.execute(select(table).where(table.c.run_id.in_(chunk))).mappings():
            found[row["run_id"]].append(row)
    return found


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

"""Runs in the store (``store.runs``): save, read, find baselines, list, prune, accept.

Every method opens its own short transaction (:meth:`Store.transaction`), so one Store may be
shared by threads; the methods a judged save composes (:meth:`Runs.get`, :meth:`Runs.by_key`,
:meth:`Runs.find_baseline`, :meth:`Runs.fingerprints`, :meth:`Runs.insert`) also run on a
caller's connection (``conn=``), inside one serialised transaction
(:func:`retrieval_eval.workflows.recording.judged_save`).

Only rows of the ``retrieval_hit_rate`` grader are read, pruned or counted as baselines: the
``eval_result`` table is shared with other graders whose rows this tool leaves alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

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

from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.names import storable_run_id
from retrieval_eval.store.rows import (
    depth_rows,
    inserted_id,
    question_rows,
    result_row,
    slice_rows,
    stored_run,
)
from retrieval_eval.store.schema import (
    GRADER,
    eval_result,
    eval_result_depth,
    eval_result_question,
    eval_result_slice,
)
from retrieval_eval.store.summary import RunSummary
from retrieval_eval.verdicts.models import Verdict

if TYPE_CHECKING:
    from retrieval_eval.store.store import Store

_CHUNK = 500  # ids per IN (...) list: far below SQLite's and PostgreSQL's parameter limits
_NEWEST = (eval_result.c.run_date.desc(), eval_result.c.id.desc())


def _chunks(ids: Sequence[int]) -> Iterator[Sequence[int]]:
    for start in range(0, len(ids), _CHUNK):
        yield ids[start : start + _CHUNK]


@dataclass(frozen=True, slots=True)
class Pruned:
    """What :meth:`Runs.prune` deleted: runs, and replays (the newest of each series kept)."""

    runs: int
    replays: int


class Runs:
    """The labelled runs of one :class:`~retrieval_eval.store.store.Store` (``store.runs``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    @contextmanager
    def _on(self, conn: Connection | None) -> Iterator[Connection]:
        """``conn`` (the caller's transaction) when given, else a transaction of our own."""
        if conn is not None:
            yield conn
            return
        with self.store.transaction() as own:
            yield own

    # -- writing --------------------------------------------------------------------------

    def save(self, result: RunResult, verdict: Verdict | None = None) -> int:
        """Save a run (summary, questions, slices) in one transaction; return its id.

        Idempotent on ``result.run_key``: saving the same run again returns the existing id, also
        when two processes race to save it (the loser's insert is rolled back to a savepoint and
        the winner's id read back).
        """
        with self.store.transaction() as conn:
            existing = _id_for_key(conn, result.run_key)
            if existing is not None:
                return existing
            try:
                with conn.begin_nested():
                    return self.insert(conn, result, verdict)
            except IntegrityError:
                # another writer saved the same run_key between our check and our insert
                existing = _id_for_key(conn, result.run_key)
                if existing is None:
                    raise
                return existing

    @staticmethod
    def insert(conn: Connection, result: RunResult, verdict: Verdict | None) -> int:
        """Insert a run's summary, questions, slices and hits at every gated depth on ``conn``
        (the caller's transaction); its id."""
        run_id = inserted_id(conn, eval_result, result_row(result, verdict))
        conn.execute(insert(eval_result_question), question_rows(result, run_id))
        slices = slice_rows(result, run_id)
        if slices:
            conn.execute(insert(eval_result_slice), slices)
        conn.execute(insert(eval_result_depth), depth_rows(result, run_id))
        return run_id

    def accept_baseline(self, run_id: int) -> None:
        """Accept a run (regressed, or refused for dead labels) as a baseline, so later runs
        compare against it."""
        run = self.get(run_id)
        if run.status != "valid":
            raise InvalidInputError(
                f"run {run_id} is invalid (too many retriever errors) and cannot be a baseline"
            )
        with self.store.transaction() as conn:
            conn.execute(
                update(eval_result).where(eval_result.c.id == run_id).values(accepted_baseline=True)
            )

    def prune(self, older_than_days: int) -> Pruned:
        """Delete runs older than ``older_than_days`` days; say how many runs and replays went.

        The current baseline of every (set, retriever, labels fingerprint) key is kept whatever
        its age, so pruning never turns the next run into a "first run". Replays older than the
        cutoff go in the same transaction, but the newest of each series. Judgments (the
        ``judgment`` table) are labels, not runs: never pruned.
        """
        if older_than_days < 0:
            raise InvalidInputError(
                f"--older-than must be zero or more days, got {older_than_days}"
            )
        cutoff = datetime.now(UTC) - timedelta(days=older_than_days)
        with self.store.transaction() as conn:
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
                query = _baseline_query(set_identifier, model_id, fingerprint, GRADER)
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
            replays = self.store.replays.prune(conn, cutoff)
            return Pruned(runs=len(doomed), replays=replays)

    # -- reading --------------------------------------------------------------------------

    def get(
        self, run_id: int, *, questions: bool = True, conn: Connection | None = None
    ) -> StoredRun:
        """The stored run ``run_id`` (UnknownNameError if there is none); ``questions=False``
        as in :meth:`history` (``store.questions`` reads them a page at a time)."""
        run = _first(self._load(_by_id(run_id), questions=questions, conn=conn))
        if run is None:
            raise self._unknown(run_id)
        return run

    def by_key(
        self, run_key: str, *, questions: bool = True, conn: Connection | None = None
    ) -> StoredRun | None:
        """The run stored under ``run_key``, or None."""
        return _first(self._load(_by_key(run_key), questions=questions, conn=conn))

    def find_baseline(
        self,
        set_identifier: str,
        model_id: str,
        labels_fingerprint: str | None,
        grader: str = GRADER,
        *,
        before: datetime | None = None,
        conn: Connection | None = None,
    ) -> StoredRun | None:
        """The baseline for a key: the newest valid run with the same labels fingerprint that
        was neither a regression nor refused as a baseline (dead labels), unless it was
        accepted. ``before`` limits it to runs that started earlier (a judged save passes the
        judged run's end: a replayed spooled run is not compared with a later one).
        """
        query = _baseline_query(set_identifier, model_id, labels_fingerprint, grader)
        if before is not None:
            query = query.where(eval_result.c.run_date < before)
        return _first(self._load(query, conn=conn))

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
            .where(*_key(set_identifier, model_id, grader))
            .order_by(*_NEWEST)
            .limit(limit),
            questions=questions,
        )

    def latest(self, *, questions: bool = True) -> list[StoredRun]:
        """The newest run of every (set, retriever) pair, ordered by set then retriever.

        ``questions=False`` as in :meth:`history`.
        """
        return self._load(_newest_per_pair(1), questions=questions)

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
            runs = self._load(_newest_per_pair(limit), questions=False)
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
                    raise self._unknown(run_id)
                if run.result.set_identifier != set_identifier or run.grader != GRADER:
                    raise InvalidInputError(
                        f"run {run_id} is a run of set {run.result.set_identifier!r}, not of "
                        f"{set_identifier!r}: name runs of {set_identifier!r} in --runs"
                    )
            runs = list(known.values())
        else:
            runs = self._load(query)
        return sorted(runs, key=lambda run: (run.run_date, run.id))

    def id_for_key(self, run_key: str) -> int | None:
        """The id of the run stored under ``run_key``, or None."""
        with self.store.transaction() as conn:
            return _id_for_key(conn, run_key)

    def fingerprints(
        self,
        set_identifier: str,
        model_id: str,
        grader: str = GRADER,
        *,
        conn: Connection | None = None,
    ) -> set[str]:
        """The labels fingerprints of the valid runs stored for a key."""
        query = (
            select(eval_result.c.labels_fingerprint)
            .where(*_key(set_identifier, model_id, grader))
            .where(eval_result.c.status == "valid", eval_result.c.labels_fingerprint.is_not(None))
            .distinct()
        )
        with self._on(conn) as on:
            return set(on.execute(query).scalars())

    def retrievers_for(self, set_identifier: str) -> list[str]:
        """Retriever identifiers with stored runs on a set (for "unknown retriever" messages)."""
        with self.store.transaction() as conn:
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
        with self.store.transaction() as conn:
            rows = conn.execute(
                select(eval_result.c.set_identifier, eval_result.c.model_id)
                .where(eval_result.c.grader == GRADER)
                .distinct()
                .order_by(eval_result.c.set_identifier, eval_result.c.model_id)
            )
            return [(row[0], row[1]) for row in rows]

    # -- helpers --------------------------------------------------------------------------

    def _unknown(self, run_id: int) -> UnknownNameError:
        return UnknownNameError(f"no stored run with id {run_id} in {self.store.display_url}")

    def _load(
        self, query: Select[Any], *, questions: bool = True, conn: Connection | None = None
    ) -> list[StoredRun]:
        with self._on(conn) as on:
            return _load_on(on, query, questions=questions)


def _key(set_identifier: str, model_id: str, grader: str) -> list[ColumnElement[bool]]:
    return [
        eval_result.c.set_identifier == set_identifier,
        eval_result.c.model_id == model_id,
        eval_result.c.grader == grader,
    ]


def _newest_per_pair(limit: int) -> Select[Any]:
    """The ``limit`` newest runs of every (set, retriever) pair, ordered by set, retriever,
    then newest first: one query, ranked by a window function."""
    pair = (eval_result.c.set_identifier, eval_result.c.model_id)
    rank = func.row_number().over(partition_by=pair, order_by=_NEWEST).label("rank")
    ranked = select(eval_result.c.id, rank).where(eval_result.c.grader == GRADER).subquery()
    newest = select(ranked.c.id).where(ranked.c.rank <= limit)
    return select(eval_result).where(eval_result.c.id.in_(newest)).order_by(*pair, *_NEWEST)


def _by_id(run_id: int) -> Select[Any]:
    # an id outside the INTEGER column's range matches nothing (PostgreSQL would raise)
    found = eval_result.c.id == run_id if storable_run_id(run_id) else false()
    return select(eval_result).where(found)


def _by_key(run_key: str) -> Select[Any]:
    return select(eval_result).where(eval_result.c.run_key == run_key)


def _baseline_query(
    set_identifier: str, model_id: str, fingerprint: str | None, grader: str
) -> Select[Any]:
    return (
        select(eval_result)
        .where(*_key(set_identifier, model_id, grader))
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


def _id_for_key(conn: Connection, run_key: str) -> int | None:
    found = conn.execute(select(eval_result.c.id).where(eval_result.c.run_key == run_key)).scalar()
    return None if found is None else int(found)


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


def _children(conn: Connection, table: Any, ids: Sequence[int]) -> dict[int, list[Any]]:
    found: dict[int, list[Any]] = defaultdict(list)
    for chunk in _chunks(ids):
        for row in conn.execute(select(table).where(table.c.run_id.in_(chunk))).mappings():
            found[row["run_id"]].append(row)
    return found

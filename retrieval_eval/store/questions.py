"""A stored run's questions, a page at a time: filters, order and paging done in SQL.

The run page (:mod:`retrieval_eval.webui.listing`) shows 50 questions of a run that may hold
200,000; reading them all to show 50 costs seconds and most of a gigabyte. Here the database
filters, orders and pages them, over the index ``ix_eval_result_question_listing`` (run, top-3
hit, top-1 hit, position), so a page costs about the same whatever the run's size:

- the order is a list of groups, each in the set's order: :class:`Named` questions (by id) or
  an :data:`Outcome` (a miss at the order's depth, a top-1 miss that is not, a top-1 hit that is
  not); an outcome group leaves out every question a named group lists, and a named group the
  ones an earlier named group listed;
- a page walks the groups, counting only the ones it skips past (a range of the index) and
  reading only its own rows;
- ids (the flipped or stale questions, as many as a run has) go to the database as one JSON
  parameter, never one parameter each.

Edge cases: a row with a top-1 hit that misses at the order's depth (a top-1 hit without a top-3
one: no scorer writes one) is a miss, listed after the other misses; a run without question rows
(another grader's) has none to list; an id that names no question of the run is ignored.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from sqlalchemy import (
    ColumnElement,
    Connection,
    Select,
    and_,
    cast,
    false,
    func,
    literal,
    not_,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import JSONB

from retrieval_eval.evaluation.results import TOP_K, AtDepths, QuestionResult
from retrieval_eval.store.names import GRADER
from retrieval_eval.store.rows import question_result
from retrieval_eval.store.schema import eval_result_question

if TYPE_CHECKING:
    from retrieval_eval.store.models import StoredRun
    from retrieval_eval.store.store import Store

Outcome = Literal["miss", "top1_miss", "top1_hit"]
# each outcome as (missed at the order's depth, top1_hit) parts, in listing order; at the seed's
# top-3 they are (top3_hit, top1_hit) ranges of the index
_RANGES: dict[str, tuple[tuple[bool, bool], ...]] = {
    "miss": ((True, False), (True, True)),
    "top1_miss": ((False, False),),
    "top1_hit": ((False, True),),
}
_q = eval_result_question


@dataclass(frozen=True)
class Named:
    """A group of the order: these questions (by id), in the set's order."""

    ids: tuple[str, ...]


@dataclass(frozen=True)
class QuestionFilter:
    """Which questions of a run: each field that is set must hold (all of them by default)."""

    top1_hit: bool | None = None
    top3_hit: bool | None = None
    miss_at: int | None = None  # only the misses at this depth
    errors: bool = False  # only the questions whose retrieval failed
    ids: tuple[str, ...] | None = None  # only these questions
    form: str | None = None
    hard_class: str | None = None

    @property
    def everything(self) -> bool:
        """No field set: every question of the run passes."""
        return self == QuestionFilter()


class Questions:
    """A stored run's questions in one :class:`~retrieval_eval.store.store.Store`
    (``store.questions``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def count(self, stored: StoredRun, where: QuestionFilter | None = None) -> int:
        """How many of the run's questions pass ``where`` (all of them without it): from the counts
        this tool stored with the run where they tell (:func:`stored_count`), else counted here."""
        where = where or QuestionFilter()
        known = stored_count(stored, where)
        if known is not None:
            return known
        with self.store.transaction() as conn:
            return _count(conn, _clauses(conn, stored.id, where))

    def page(
        self,
        run_id: int,
        where: QuestionFilter,
        order: Sequence[Named | Outcome],
        *,
        offset: int,
        limit: int,
        depth: int = TOP_K,
    ) -> list[QuestionResult]:
        """The questions ``offset`` to ``offset + limit`` of those passing ``where``, in ``order``
        (see the module docstring), its outcomes told at ``depth``; a question in no group of
        ``order`` is not listed."""
        rows: list[Any] = []
        with self.store.transaction() as conn:
            for clauses in _groups(conn, _clauses(conn, run_id, where), order, depth):
                if len(rows) == limit:
                    break
                if offset:
                    count = _count(conn, clauses)
                    if count <= offset:
                        offset -= count
                        continue
                query = select(_q).where(*clauses).order_by(_q.c.position)
                rows += conn.execute(query.offset(offset).limit(limit - len(rows))).mappings().all()
                offset = 0
        return [question_result(row) for row in rows]

    def by_id(self, run_id: int, ids: Sequence[str]) -> dict[str, QuestionResult]:
        """The run's questions among ``ids``, by id (an id that names none is left out)."""
        if not ids:
            return {}
        with self.store.transaction() as conn:
            query = select(_q).where(_q.c.run_id == run_id, _q.c.question_id.in_(_ids(conn, ids)))
            rows: Sequence[Any] = conn.execute(query).mappings().all()
        return {q.id: q for q in map(question_result, rows)}

    def values(self, run_id: int) -> tuple[list[str], list[str]]:
        """The forms and hard classes of the run's questions, each in the set's order (where it
        first appears); read from every question row, for a run stored without them
        (:attr:`~retrieval_eval.store.models.StoredRun.forms`)."""
        found: list[list[str]] = []
        with self.store.transaction() as conn:
            for column in (_q.c.form, _q.c.hard_class):
                first = func.min(_q.c.position).label("first")
                query = (
                    select(column, first)
                    .where(_q.c.run_id == run_id, column.is_not(None), column != "")
                    .group_by(column)
                    .order_by(first)
                )
                found.append([str(value) for value, _ in conn.execute(query)])
        return found[0], found[1]


def stored_count(stored: StoredRun, where: QuestionFilter) -> int | None:
    """How many questions pass an outcome filter, from the figures this tool saved with the run
    and all its questions (hits and errors overall, hits per slice); None: count the rows."""
    if stored.grader != GRADER or where.ids is not None or (where.form and where.hard_class):
        return None
    r, outcome = stored.result, (where.top1_hit, where.top3_hit)
    sliced = where.form is not None or where.hard_class is not None
    if where.errors:  # errors are counted for the whole run only
        plain = outcome == (None, None) and where.miss_at is None
        return r.error_count if not sliced and plain else None
    figures: AtDepths
    if sliced:
        slices = r.by_form if where.form is not None else r.by_hard_class
        rates = slices.get(where.form or where.hard_class or "")
        if rates is None:
            return 0
        figures, n, top1, top3 = rates, rates.questions, rates.top1_hits, rates.top3_hits
    else:
        figures, n, top1, top3 = r, r.question_count, r.top1_hits, r.top3_hits
    if where.miss_at is not None:  # the run's hits at a gated depth (None: not gated)
        hits = figures.hits(where.miss_at)
        return None if hits is None or outcome != (None, None) else n - hits
    counts = {(None, None): n, (True, None): top1, (False, None): n - top1, (None, False): n - top3}
    return counts.get(outcome)


def _clauses(conn: Connection, run_id: int, where: QuestionFilter) -> list[ColumnElement[bool]]:
    clauses = [_q.c.run_id == run_id]
    if where.top1_hit is not None:
        clauses.append(_q.c.top1_hit == where.top1_hit)
    if where.top3_hit is not None:
        clauses.append(_q.c.top3_hit == where.top3_hit)
    if where.miss_at is not None:
        clauses.append(_missed(where.miss_at)[0])
    if where.errors:
        clauses.append(_q.c.error.is_not(None))
    if where.ids is not None:
        clauses.append(_q.c.question_id.in_(_ids(conn, where.ids)) if where.ids else false())
    if where.form is not None:
        clauses.append(_q.c.form == where.form)
    if where.hard_class is not None:
        clauses.append(_q.c.hard_class == where.hard_class)
    return clauses


def _missed(depth: int) -> tuple[ColumnElement[bool], ColumnElement[bool]]:
    """A miss at ``depth`` and a hit there: at the seed's top-1 and top-3 their column (a range
    of the listing index, the stored counts' meaning), at another depth :func:`_missed_at`."""
    if depth in (1, TOP_K):
        seed = _q.c.top1_hit if depth == 1 else _q.c.top3_hit
        return seed == false(), seed == true()
    missed = _missed_at(depth)
    return missed, not_(missed)


def _missed_at(depth: int) -> ColumnElement[bool]:
    """A miss at ``depth`` by the scoring rules (:meth:`QuestionResult.hit_at`), from the row's
    columns: a miss at the seed's depth at or above it (top-3 from depth 3, else top-1), and no
    target within ``depth``. A failed call, and a question no document answers that got some,
    have no first hit rank, so they stay misses; a target within ``depth`` is a hit."""
    seed = _q.c.top3_hit if depth >= TOP_K else _q.c.top1_hit
    return and_(seed == false(), or_(_q.c.first_hit_rank.is_(None), _q.c.first_hit_rank > depth))


def _groups(
    conn: Connection,
    base: list[ColumnElement[bool]],
    order: Sequence[Named | Outcome],
    depth: int,
) -> list[list[ColumnElement[bool]]]:
    """The WHERE clauses of each group of ``order``, in order (an outcome as its parts, a miss
    or hit at ``depth``)."""
    at_depth = dict(zip((True, False), _missed(depth), strict=True))
    named: dict[str, None] = {}
    groups: list[tuple[list[ColumnElement[bool]], bool]] = []  # (clauses, an outcome's)
    for group in order:
        if isinstance(group, Named):
            ids = [i for i in dict.fromkeys(group.ids) if i not in named]
            named.update(dict.fromkeys(ids))
            if ids:
                groups.append(([*base, _q.c.question_id.in_(_ids(conn, ids))], False))
            continue
        for missed, top1 in _RANGES[group]:
            groups.append(([*base, at_depth[missed], _q.c.top1_hit == top1], True))
    if named:  # the outcome groups leave the named questions out
        listed = _q.c.question_id.not_in(_ids(conn, list(named)))
        groups = [
            ([*clauses, listed] if outcome else clauses, outcome) for clauses, outcome in groups
        ]
    return [clauses for clauses, _ in groups]


def _count(conn: Connection, clauses: list[ColumnElement[bool]]) -> int:
    return int(conn.execute(select(func.count()).select_from(_q).where(*clauses)).scalar_one())


def _ids(conn: Connection, ids: Sequence[str]) -> Select[Any]:
    """``ids`` as a one-column subquery over one JSON parameter (a list of any length)."""
    payload = literal(json.dumps(list(ids)))
    if conn.dialect.name == "postgresql":
        values = func.jsonb_array_elements_text(cast(payload, JSONB)).table_valued("value")
    else:
        values = func.json_each(payload).table_valued("value")
    return select(values.c.value)

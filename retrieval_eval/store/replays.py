"""Samples and replays in the store: a sample frozen once, a replay and its rankings in ONE
transaction (rankings by a binary ``COPY`` on PostgreSQL: psycopg sends each row's values as
PostgreSQL's own binary forms, the ids as the JSON text orjson makes), and the reads the CLI and
the dashboard need.

The replay compared with is the newest earlier replay of the same sample (name AND fingerprint)
and retriever that is not ``invalid``; replays of different samples are never compared.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, fields
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, delete, func, insert, select

from retrieval_eval.errors import UnknownNameError
from retrieval_eval.replay.compare import Comparison, QueryChange, Ranked
from retrieval_eval.replay.record import ReplayRecord
from retrieval_eval.replay.samples import QuerySample, SampledQuery
from retrieval_eval.store.rows import inserted_id
from retrieval_eval.store.schema import query_sample, query_sample_item, replay_ranking, replay_run

if TYPE_CHECKING:
    from retrieval_eval.store.store import Store

COPY_COLUMNS = (
    "replay_id",
    "position",
    "query_key",
    "ids",
    "error",
    "rbo",
    "residual",
    "jaccard",
    "top1_changed",
    "overlap3",
)
# the binary COPY's column types, in COPY_COLUMNS order (psycopg dumps each value as its type)
COPY_TYPES = (
    "int4",
    "int4",
    "varchar",
    "json",
    "text",
    "float8",
    "float8",
    "float8",
    "bool",
    "int4",
)


@dataclass(frozen=True, slots=True)
class StoredReplay:
    """A replay's row: what history, the dashboard and alerts read."""

    run_key: str
    sample_id: int
    sample_name: str
    retriever: str
    k: int
    p: float
    run_date: datetime
    id: int
    index_version: str | None
    package_version: str | None
    query_count: int
    error_count: int
    state: str
    compared_id: int | None
    against: str | None
    mean_rbo: float | None
    top1_changed: float | None
    weighted_mean_rbo: float | None
    weighted_top1_changed: float | None
    figures: dict[str, Any]


class Replays:
    """The query samples and replays of one :class:`~retrieval_eval.store.store.Store`
    (``store.replays``)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save_sample(self, sample: QuerySample) -> int:
        """The sample's id, stored now unless one with its name and fingerprint is stored."""
        with self.store.transaction() as conn:
            found = conn.execute(
                select(query_sample.c.id).where(
                    query_sample.c.name == sample.name,
                    query_sample.c.fingerprint == sample.fingerprint,
                )
            ).scalar()
            if found is not None:
                return int(found)
            sample_id = inserted_id(
                conn,
                query_sample,
                dict(
                    name=sample.name,
                    fingerprint=sample.fingerprint,
                    privacy=sample.privacy,
                    query_count=len(sample.queries),
                    log_queries=sample.log_queries,
                    log_traffic=sample.log_traffic,
                    created_at=datetime.now(UTC),
                ),
            )
            if sample.queries:
                conn.execute(
                    insert(query_sample_item),
                    [
                        dict(
                            {column: getattr(q, name) for column, name in _ITEM_COLUMNS.items()},
                            sample_id=sample_id,
                            position=i,
                        )
                        for i, q in enumerate(sample.queries)
                    ],
                )
            return sample_id

    def latest_sample(self, name: str) -> tuple[int, QuerySample] | None:
        """The newest stored sample called ``name``, with its id."""
        with self.store.transaction() as conn:
            row = (
                conn.execute(
                    select(query_sample)
                    .where(query_sample.c.name == name)
                    .order_by(query_sample.c.id.desc())
                    .limit(1)
                )
                .mappings()
                .first()
            )
            if row is None:
                return None
            return int(row["id"]), _sample(conn, row)

    def get_sample(self, sample_id: int) -> QuerySample:
        with self.store.transaction() as conn:
            row = (
                conn.execute(select(query_sample).where(query_sample.c.id == sample_id))
                .mappings()
                .first()
            )
            if row is None:
                raise UnknownNameError(f"no query sample with id {sample_id}")
            return _sample(conn, row)

    def save(self, record: ReplayRecord) -> int:
        """Save a replay (its sample stored: ``sample_id``) and its rankings in one transaction;
        idempotent on ``run_key``."""
        if record.sample_id is None:
            raise ValueError("a replay is saved once its sample is: store the sample first")
        comparison = record.comparison
        figures = _figures(comparison)
        with self.store.transaction() as conn:
            found = conn.execute(
                select(replay_run.c.id).where(replay_run.c.run_key == record.run_key)
            ).scalar()
            if found is not None:
                return int(found)
            overall = comparison.overall
            replay_id = inserted_id(
                conn,
                replay_run,
                dict(
                    run_key=record.run_key,
                    sample_id=record.sample_id,
                    sample_name=record.sample_name,
                    retriever=record.retriever,
                    k=record.k,
                    p=record.p,
                    run_date=record.started_at,
                    compared_id=record.compared_id,
                    against=record.against,
                    index_version=record.index_version,
                    package_version=record.package_version,
                    created_at=datetime.now(UTC),
                    query_count=len(record.rankings),
                    error_count=sum(1 for r in record.rankings if r.error is not None),
                    state=comparison.state,
                    mean_rbo=overall.mean_rbo,
                    top1_changed=overall.top1_changed_share,
                    weighted_mean_rbo=overall.weighted_mean_rbo,
                    weighted_top1_changed=overall.weighted_top1_changed,
                    figures=figures,
                ),
            )
            _insert_rankings(conn, _ranking_rows(replay_id, record))
            return replay_id

    def previous(
        self, sample_id: int, retriever: str, before: datetime | None = None
    ) -> StoredReplay | None:
        """The replay a new one of (sample, retriever) is compared with."""
        query = (
            select(replay_run)
            .where(
                replay_run.c.sample_id == sample_id,
                replay_run.c.retriever == retriever,
                replay_run.c.state.not_in(("invalid", "empty")),  # nothing to compare with
            )
            .order_by(replay_run.c.run_date.desc(), replay_run.c.id.desc())
            .limit(1)
        )
        if before is not None:
            query = query.where(replay_run.c.run_date < before)
        with self.store.transaction() as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else _stored(row)

    def get(self, replay_id: int) -> StoredReplay:
        with self.store.transaction() as conn:
            row = (
                conn.execute(select(replay_run).where(replay_run.c.id == replay_id))
                .mappings()
                .first()
            )
        if row is None:
            raise UnknownNameError(f"no stored replay with id {replay_id}")
        return _stored(row)

    def history(self, sample_name: str, retriever: str, limit: int = 50) -> list[StoredReplay]:
        """The newest replays of (sample name, retriever), newest first."""
        with self.store.transaction() as conn:
            rows = conn.execute(
                select(replay_run)
                .where(replay_run.c.sample_name == sample_name, replay_run.c.retriever == retriever)
                .order_by(replay_run.c.run_date.desc(), replay_run.c.id.desc())
                .limit(limit)
            ).mappings()
            return [_stored(row) for row in rows]

    def pairs(self) -> list[tuple[str, str, int]]:
        """(sample name, retriever, replay count) of every stored series."""
        with self.store.transaction() as conn:
            rows = conn.execute(
                select(replay_run.c.sample_name, replay_run.c.retriever, func.count())
                .group_by(replay_run.c.sample_name, replay_run.c.retriever)
                .order_by(replay_run.c.sample_name, replay_run.c.retriever)
            ).all()
        return [(a, b, int(n)) for a, b, n in rows]

    def rankings(self, replay_id: int) -> list[Ranked]:
        """A stored replay's rankings in its sample's order, with the sample's texts."""
        with self.store.transaction() as conn:
            sample_id = conn.execute(
                select(replay_run.c.sample_id).where(replay_run.c.id == replay_id)
            ).scalar()
            if sample_id is None:
                raise UnknownNameError(f"no stored replay with id {replay_id}")
            items = {
                row["query_key"]: row
                for row in conn.execute(
                    select(query_sample_item).where(query_sample_item.c.sample_id == sample_id)
                ).mappings()
            }
            out = []
            for row in conn.execute(
                select(replay_ranking)
                .where(replay_ranking.c.replay_id == replay_id)
                .order_by(replay_ranking.c.position)
            ).mappings():
                item = items.get(row["query_key"])
                out.append(
                    Ranked(
                        row["query_key"],
                        item["query_text"] if item else "",
                        item["query_count"] if item else 1,
                        item["bucket"] if item else "tail",
                        tuple(row["ids"] or ()),
                        row["error"],
                    )
                )
            return out

    @staticmethod
    def prune(conn: Connection, cutoff: datetime) -> int:
        """Delete replays older than ``cutoff`` but the newest of each series (the next replay's
        comparison), with their rankings; samples no replay uses any more go too."""
        newest = {
            row.id
            for row in conn.execute(
                select(func.max(replay_run.c.id).label("id")).group_by(
                    replay_run.c.sample_id, replay_run.c.retriever
                )
            )
        }
        doomed = [
            replay_id
            for replay_id in conn.execute(
                select(replay_run.c.id).where(replay_run.c.run_date < cutoff)
            ).scalars()
            if replay_id not in newest
        ]
        for start in range(0, len(doomed), 500):
            chunk = doomed[start : start + 500]
            conn.execute(delete(replay_ranking).where(replay_ranking.c.replay_id.in_(chunk)))
            conn.execute(
                replay_run.update()
                .where(replay_run.c.compared_id.in_(chunk))
                .values(compared_id=None)
            )
            conn.execute(delete(replay_run).where(replay_run.c.id.in_(chunk)))
        return len(doomed)

    def changed_page(
        self, replay_id: int, *, bucket: str | None = None, offset: int = 0, limit: int = 50
    ) -> tuple[int, list[ChangedQuery]]:
        """(how many, one page) of a replay's queries, those that moved most first (lowest RBO
        weighted by count; errors and uncompared queries last), ordered and paged in SQL."""
        from sqlalchemy import and_, case, nulls_last

        with self.store.transaction() as conn:
            run = conn.execute(
                select(replay_run.c.sample_id, replay_run.c.compared_id).where(
                    replay_run.c.id == replay_id
                )
            ).first()
            if run is None:
                raise UnknownNameError(f"no stored replay with id {replay_id}")
            item = query_sample_item
            joined = replay_ranking.join(
                item,
                and_(
                    item.c.sample_id == run.sample_id,
                    item.c.query_key == replay_ranking.c.query_key,
                ),
            )
            where = [replay_ranking.c.replay_id == replay_id]
            if bucket is not None:
                where.append(item.c.bucket == bucket)
            total = conn.execute(
                select(func.count()).select_from(joined).where(*where)
            ).scalar_one()
            moved = case(
                (replay_ranking.c.rbo.is_(None), None),
                else_=(1.0 - replay_ranking.c.rbo) * item.c.query_count,
            )
            rows = conn.execute(
                select(
                    replay_ranking.c.query_key,
                    item.c.query_text,
                    item.c.query_count,
                    item.c.bucket,
                    replay_ranking.c.ids,
                    replay_ranking.c.error,
                    replay_ranking.c.rbo,
                    replay_ranking.c.top1_changed,
                )
                .select_from(joined)
                .where(*where)
                .order_by(nulls_last(moved.desc()), replay_ranking.c.position)
                .offset(offset)
                .limit(limit)
            ).all()
            before: dict[str, tuple[str, ...]] = {}
            if run.compared_id is not None and rows:
                before = {
                    key: tuple(ids or ())
                    for key, ids in conn.execute(
                        select(replay_ranking.c.query_key, replay_ranking.c.ids).where(
                            replay_ranking.c.replay_id == run.compared_id,
                            replay_ranking.c.query_key.in_([r.query_key for r in rows]),
                        )
                    )
                }
        return int(total), [
            ChangedQuery(
                r.query_key,
                r.query_text,
                r.query_count,
                r.bucket,
                tuple(r.ids or ()),
                r.error,
                r.rbo,
                r.top1_changed,
                before.get(r.query_key, ()),
            )
            for r in rows
        ]


# query_sample_item's columns that hold a SampledQuery, and its fields they hold
_ITEM_COLUMNS = {
    "query_key": "key",
    "query_text": "text",
    "query_count": "count",
    "bucket": "bucket",
    "query_id": "query_id",
}


def _sample(conn: Connection, row: Any) -> QuerySample:
    items = conn.execute(
        select(query_sample_item)
        .where(query_sample_item.c.sample_id == row["id"])
        .order_by(query_sample_item.c.position)
    ).mappings()
    queries = tuple(
        SampledQuery(**{name: i[column] for column, name in _ITEM_COLUMNS.items()}) for i in items
    )
    return QuerySample(row["name"], row["privacy"], queries, row["log_queries"], row["log_traffic"])


def _ranking_rows(replay_id: int, record: ReplayRecord) -> Iterator[tuple[Any, ...]]:
    """One row per query, in COPY_COLUMNS order; a query not compared has no figures. The table
    has no unique key: two rankings of one query are refused here, and the save with them."""
    if len({r.key for r in record.rankings}) != len(record.rankings):
        raise ValueError("a replay holds two rankings of one query: each query is saved once")
    changes = record.comparison.changes
    if [c.key for c in changes] != [r.key for r in record.rankings]:  # compare() keeps the order
        by_key = {c.key: c for c in changes}
        changes = tuple(by_key.get(r.key) for r in record.rankings)  # type: ignore[misc]
    none = (None,) * len(COPY_COLUMNS[5:])
    for position, (ranked, change) in enumerate(zip(record.rankings, changes, strict=True)):
        # QueryChange's figures, in COPY_COLUMNS order, are all None when it was not compared
        figures: tuple[Any, ...] = none if change is None else change[CHANGE_FIGURES]  # type: ignore[assignment]
        yield (replay_id, position, ranked.key, ranked.ids, ranked.error, *figures)


# where QueryChange keeps the figures COPY_COLUMNS ends with (a test checks the names match)
CHANGE_FIGURES = slice(QueryChange._fields.index("rbo"), QueryChange._fields.index("overlap3") + 1)


def copy_rows(cursor: Any, table: str, rows: Iterable[tuple[Any, ...]]) -> None:
    """Write ``rows`` (COPY_COLUMNS order) into ``table`` with psycopg's binary COPY, the ids
    dumped by orjson (psycopg's own ``json`` dumper is the standard library's)."""
    import orjson
    from psycopg.types.json import set_json_dumps

    set_json_dumps(orjson.dumps, cursor)
    columns = ", ".join(COPY_COLUMNS)
    with cursor.copy(f"COPY {table} ({columns}) FROM STDIN (FORMAT BINARY)") as copy:
        copy.set_types(COPY_TYPES)
        for row in rows:
            copy.write_row(row)


def _insert_rankings(conn: Connection, rows: Iterator[tuple[Any, ...]]) -> None:
    if conn.dialect.name == "postgresql":
        copy_rows(conn.connection.driver_connection.cursor(), "replay_ranking", rows)  # type: ignore[union-attr]
        return
    values = [dict(zip(COPY_COLUMNS, row, strict=True)) for row in rows]
    if values:
        conn.execute(insert(replay_ranking), values)


def _figures(comparison: Comparison) -> dict[str, Any]:
    return {
        "overall": comparison.overall.as_json("top1_interval"),
        "buckets": {name: f.as_json("top1_interval") for name, f in comparison.buckets.items()},
        "errors": comparison.errors,
        "error_reasons": comparison.error_reasons(),
        "error_rate": comparison.error_rate,
        "reasons": list(comparison.reasons),
    }


def _stored(row: Any) -> StoredReplay:
    """A ``replay_run`` row as its StoredReplay: each field the column of its name, the date
    made aware (SQLite gives naive datetimes back), no figures an empty mapping."""
    values = {name: row[name] for name in _STORED_FIELDS}
    if values["run_date"].tzinfo is None:
        values["run_date"] = values["run_date"].replace(tzinfo=UTC)
    values["figures"] = values["figures"] or {}
    return StoredReplay(**values)


_STORED_FIELDS = tuple(f.name for f in fields(StoredReplay))  # all columns of replay_run


@dataclass(frozen=True, slots=True)
class ChangedQuery:
    """One query of a stored replay as its page lists it."""

    key: str
    text: str
    count: int
    bucket: str
    ids: tuple[str, ...]
    error: str | None
    rbo: float | None
    top1_changed: bool | None
    before: tuple[str, ...]

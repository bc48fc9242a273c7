"""Replay at scale (issue 22, item 9), each a ratio within one run:

- a 100,000-query sample replayed against an instant in-process retriever, compared with the
  previous replay and stored on PostgreSQL, against a bare loop that calls the same retriever
  and computes RBO with the same code (target ≤ 1.5×);
- saving 100,000 rankings (the replay's own save: its row, the rankings, one transaction)
  against a psycopg ``COPY`` of the same rows, in the same format, into a bare table of the same
  columns (target ≤ 2×);
- the replay's peak memory (traced allocations of the replay, its comparison and its save), and
  the compare step's alone.

The two sides of each ratio alternate and keep their best time (:func:`best_times`).
"""

from __future__ import annotations

import os
import time
import tracemalloc
import uuid
from datetime import UTC, datetime
from typing import Any

from benchmarks.common import Row, best_times, drop_pg_schema, pg_schema, proc_status, seconds

PG = os.environ.get("RETRIEVAL_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
QUERIES = int(os.environ.get("REPLAY_BENCH_QUERIES", "100000"))
K = 10
REPEAT = int(os.environ.get("REPLAY_BENCH_REPEAT", "3"))


def _sample(n: int) -> Any:
    from retrieval_eval.replay.samples import QuerySample, SampledQuery

    queries = tuple(
        SampledQuery(f"{i:032x}", f"query number {i}", 1 + (n - i) // 1000, "tail")
        for i in range(n)
    )
    return QuerySample("bench", "plain", queries, n, sum(q.count for q in queries))


def _retriever(shift: int) -> Any:
    from retrieval_eval.retrievers.base import FunctionRetriever

    def ranking(text: str, limit: int) -> list[str]:
        base = int(text.rsplit(" ", 1)[1])
        return [f"d{(base * 7 + j + shift) % 5000}" for j in range(limit)]

    return FunctionRetriever(ranking, identifier="instant")


def _bare_loop(sample: Any, retriever: Any, before: Any) -> float:
    from retrieval_eval.replay.rbo import rbo

    total = 0.0
    for q, b in zip(sample.queries, before, strict=True):
        ids = list(dict.fromkeys(retriever.retrieve(q.text, K * 4)))[:K]
        total += rbo(b.ids, ids, 0.9).ext
    return total


def run() -> list[Row]:
    from retrieval_eval.replay.record import ReplayRecord, packed
    from retrieval_eval.replay.run import ReplaySettings, replay_sample
    from retrieval_eval.store import open_store

    schema, url = pg_schema(PG)
    try:
        sample = _sample(QUERIES)
        texts = {q.key: q.text for q in sample.queries}
        settings = ReplaySettings(k=K, timeout_s=None)
        before = replay_sample(sample, texts, _retriever(0), settings)
        retriever = _retriever(1)

        with open_store(url.replace("postgresql://", "postgresql+psycopg://")) as store:
            sample_id = store.replays.save_sample(sample)

            def record(after: Any) -> ReplayRecord:
                """The replay as the workflow records it: rankings packed, compared with
                ``before`` (its comparison a view, computed when first read)."""
                return ReplayRecord.of_sample(
                    sample,
                    run_key=uuid.uuid4().hex,
                    sample_id=sample_id,
                    retriever="instant",
                    k=K,
                    p=0.9,
                    started_at=datetime.now(UTC),
                    rankings=packed(after),
                    before=packed_before,
                )

            packed_before = packed(before)
            parts = {"ask": float("inf"), "compare": float("inf"), "save": float("inf")}

            def ours() -> Any:
                t0 = time.perf_counter()
                after = replay_sample(sample, texts, retriever, settings)
                t1 = time.perf_counter()
                replayed = record(after)
                comparison = replayed.comparison  # the record built, then compared
                t2 = time.perf_counter()
                store.replays.save(replayed)
                t3 = time.perf_counter()
                for name, took in (("ask", t1 - t0), ("compare", t2 - t1), ("save", t3 - t2)):
                    parts[name] = min(parts[name], took)
                return replayed, comparison

            whole = best_times(
                {"bare": lambda: _bare_loop(sample, retriever, before), "ours": ours},
                REPEAT,
                budget_s=240,
            )
            replayed, _comparison = ours()
            bare, constrained = _tables(store)
            rows = [
                (1, i, r.key, r.ids, r.error, 0.5, 0.1, 0.5, True, 2)
                for i, r in enumerate(replayed.rankings)
            ]
            saves = best_times(
                {
                    # a new run key each time; the comparison computed once, kept by but()
                    "save": lambda: store.replays.save(replayed.but(run_key=uuid.uuid4().hex)),
                    "copy": lambda: _copy(store, bare, rows),
                    "constrained": lambda: _copy(store, constrained, rows),
                },
                REPEAT,
                budget_s=180,
            )

            resident = proc_status("VmHWM")  # before tracing, which keeps its own records
            tracemalloc.start()
            started = time.perf_counter()
            ours()
            traced = time.perf_counter() - started
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            after = replay_sample(sample, texts, retriever, settings)
            tracemalloc.start()
            compared = record(after).comparison  # the compare step: the record built, compared
            compare_peak = tracemalloc.get_traced_memory()[1]
            del compared
            tracemalloc.stop()
    finally:
        drop_pg_schema(PG, schema)
    ratio, save_ratio = whole["ours"] / whole["bare"], saves["save"] / saves["copy"]
    split = ", ".join(f"{name} {seconds(took)}" for name, took in parts.items())
    return [
        Row(
            f"replay {QUERIES:,} queries (PG)",
            seconds(whole["ours"]),
            seconds(whole["bare"]),
            ratio,
            "≤ 1.5",
            ratio <= 1.5,
            "replay + compare + save vs a bare loop calling the same retriever, same RBO",
        ),
        Row(
            "  the replay's parts (best of each)",
            split,
            seconds(whole["bare"]),
            parts["ask"] / whole["bare"],
            "info",
            None,
            "asking (the protocol), comparing, saving; the ratio: asking alone vs the bare loop",
        ),
        Row(
            f"save {QUERIES:,} rankings (PG)",
            seconds(saves["save"]),
            seconds(saves["copy"]),
            save_ratio,
            "≤ 2",
            save_ratio <= 2,
            "the replay's one-transaction save vs psycopg's COPY of the same rows, same format",
        ),
        Row(
            "  COPY into replay_ranking's shape",
            seconds(saves["constrained"]),
            seconds(saves["copy"]),
            saves["constrained"] / saves["copy"],
            "info",
            None,
            "the same COPY into a table with the store's BRIN index on replay_id: "
            "the floor a save into the store's table has",
        ),
        Row(
            "replay peak memory",
            f"{peak / 2**20:.0f} MiB",
            "–",
            None,
            "info",
            None,
            f"traced allocations of one replay, its comparison and its save, beyond the "
            f"sample and the replay before it ({traced:.0f} s traced); the benchmark process's "
            f"peak resident set (VmHWM) before tracing, with the sample, the replay before and "
            f"every timed round's data: {resident / 2**20:.0f} MiB",
        ),
        Row(
            "  the comparison's peak memory",
            f"{compare_peak / 2**20:.0f} MiB",
            "–",
            None,
            "info",
            None,
            "traced allocations of the compare step alone: the replay's record built (its "
            "rankings packed) and compared with the replay before it",
        ),
    ]


COLUMNS = (
    "replay_id int NOT NULL, position int NOT NULL, query_key varchar(64) NOT NULL, ids json NOT NULL,"
    " error text, rbo float, residual float, jaccard float, top1_changed boolean, overlap3 int"
)


def _tables(store: Any) -> tuple[str, str]:
    """Two tables of replay_ranking's columns: one bare (no index), one with its index."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(f"CREATE TABLE bare_ranking ({COLUMNS})")
        conn.exec_driver_sql(f"CREATE TABLE indexed_ranking ({COLUMNS})")
        conn.exec_driver_sql("CREATE INDEX ON indexed_ranking USING brin (replay_id)")
    return "bare_ranking", "indexed_ranking"


def _copy(store: Any, table: str, rows: list[tuple[Any, ...]]) -> None:
    """psycopg's COPY of the same rows as the save writes, in its format (the save's own
    :func:`copy_rows`), committed; the rows are built beforehand (the save builds its own
    inside its timing)."""
    from retrieval_eval.store.replays import copy_rows

    with store.engine.begin() as conn:
        copy_rows(conn.connection.driver_connection.cursor(), table, rows)

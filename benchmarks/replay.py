"""Replay at scale (issue 22, item 9), each a ratio within one run:

- a 100,000-query sample replayed against an instant in-process retriever, compared with the
  previous replay and stored on PostgreSQL, against a bare loop that calls the same retriever
  and computes RBO with the same code (target ≤ 1.5×);
- saving 100,000 rankings (the replay's own save) against a psycopg ``COPY`` of the same rows
  into a table of the same shape (target ≤ 2×);
- the replay's peak memory (traced allocations; information).
"""

from __future__ import annotations

import os
import time
import tracemalloc
import uuid
from datetime import UTC, datetime

from benchmarks.common import Row, drop_pg_schema, pg_schema, seconds

PG = os.environ.get("RETRIEVAL_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
QUERIES = int(os.environ.get("REPLAY_BENCH_QUERIES", "100000"))
K = 10


def _sample(n: int):
    from retrieval_eval.replay.samples import QuerySample, SampledQuery

    queries = tuple(
        SampledQuery(f"{i:032x}", f"query number {i}", 1 + (n - i) // 1000, "tail")
        for i in range(n)
    )
    return QuerySample("bench", "plain", queries, n, sum(q.count for q in queries))


def _retriever(shift: int):
    from retrieval_eval.retrievers.base import FunctionRetriever

    def ranking(text: str, limit: int) -> list[str]:
        base = int(text.rsplit(" ", 1)[1])
        return [f"d{(base * 7 + j + shift) % 5000}" for j in range(limit)]

    return FunctionRetriever(ranking, identifier="instant")


def _bare_loop(sample, retriever, before) -> float:
    from retrieval_eval.replay.rbo import rbo

    t0 = time.perf_counter()
    total = 0.0
    for q, b in zip(sample.queries, before, strict=True):
        ids = list(dict.fromkeys(retriever.retrieve(q.text, K * 4)))[:K]
        total += rbo(b.ids, ids, 0.9).ext
    return time.perf_counter() - t0


def run() -> list[Row]:
    from retrieval_eval.replay.compare import compare
    from retrieval_eval.replay.run import ReplaySettings, replay_sample
    from retrieval_eval.store import open_store
    from retrieval_eval.store.replays import ReplayRecord, save_replay, save_sample

    schema, url = pg_schema(PG)
    try:
        sample = _sample(QUERIES)
        texts = {q.key: q.text for q in sample.queries}
        settings = ReplaySettings(k=K, timeout_s=None)
        before = replay_sample(sample, texts, _retriever(0), settings)
        retriever = _retriever(1)

        with open_store(url.replace("postgresql://", "postgresql+psycopg://")) as store:
            sample_id = save_sample(store, sample)

            def ours() -> tuple[float, float]:
                t0 = time.perf_counter()
                after = replay_sample(sample, texts, retriever, settings)
                comparison = compare(before, after, k=K)
                t_save = time.perf_counter()
                save_replay(
                    store,
                    ReplayRecord(
                        uuid.uuid4().hex,
                        sample_id,
                        sample.name,
                        "instant",
                        K,
                        0.9,
                        datetime.now(UTC),
                        after,
                        comparison,
                    ),
                )
                done = time.perf_counter()
                return done - t0, done - t_save

            bare = min(_bare_loop(sample, retriever, before) for _ in range(2))
            runs = [ours() for _ in range(2)]
            whole = min(r[0] for r in runs)
            save = min(r[1] for r in runs)

            tracemalloc.start()
            after = replay_sample(sample, texts, retriever, settings)
            compare(before, after, k=K)
            peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()

            copy = _copy_time(store, after)
    finally:
        drop_pg_schema(PG, schema)
    return [
        Row(
            f"replay {QUERIES:,} queries (PG)",
            seconds(whole),
            seconds(bare),
            whole / bare,
            "≤ 1.5",
            whole / bare <= 1.5,
            "replay + compare + save vs a bare loop with the same RBO",
        ),
        Row(
            f"save {QUERIES:,} rankings (PG)",
            seconds(save),
            seconds(copy),
            save / copy,
            "≤ 2",
            save / copy <= 2,
            "the replay's one-transaction save vs psycopg COPY of the rows",
        ),
        Row(
            "replay peak memory",
            f"{peak / 2**20:.0f} MiB",
            "–",
            None,
            "info",
            None,
            "traced allocations of one replay and its comparison",
        ),
    ]


def _copy_time(store, rankings) -> float:
    """psycopg COPY of the same rows into a bare table of replay_ranking's shape, committed."""
    with store.engine.begin() as conn:
        conn.exec_driver_sql(
            "CREATE TABLE bare_ranking (replay_id int, position int, query_key varchar(64),"
            " ids text[], error text, rbo float, residual float, jaccard float,"
            " top1_changed boolean, overlap3 int)"
        )
    rows = [
        (1, i, r.key, list(r.ids), r.error, 0.5, 0.1, 0.5, True, 2) for i, r in enumerate(rankings)
    ]
    t0 = time.perf_counter()
    with store.engine.begin() as conn:
        cursor = conn.connection.driver_connection.cursor()
        with cursor.copy("COPY bare_ranking FROM STDIN") as copy:
            for row in rows:
                copy.write_row(row)
    return time.perf_counter() - t0

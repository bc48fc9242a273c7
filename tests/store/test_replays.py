"""Samples and replays in the store, on SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from retrieval_eval.replay.compare import Ranked
from retrieval_eval.replay.record import Ranking, ReplayRecord
from retrieval_eval.replay.samples import QuerySample, SampledQuery
from retrieval_eval.store import Store
from retrieval_eval.store.runs import Pruned

SAMPLE = QuerySample(
    "traffic",
    "redacted",
    tuple(
        SampledQuery(f"k{i}", f"query {i} for <email>", 10 - i, "head" if i < 2 else "tail")
        for i in range(5)
    ),
    log_queries=50,
    log_traffic=400,
)


def ranked(shift: int = 0, error_at: int | None = None) -> list[Ranked]:
    out = []
    for q in SAMPLE.queries:
        i = int(q.key[1:])
        ids = tuple(f"doc-{(i + j + shift) % 7}" for j in range(4))
        error = "timed out" if error_at == i else None
        out.append(Ranked(q.key, q.text, q.count, q.bucket, () if error else ids, error))
    return out


def record(
    sample_id: int,
    rows: list[Ranked],
    before: list[Ranked] | None,
    when: datetime,
    compared_id: int | None = None,
    key: str = "r",
) -> ReplayRecord:
    def packed(rows: list[Ranked]) -> list[Ranking]:
        return [Ranking(r.key, tuple(r.ids), r.error) for r in rows]

    return ReplayRecord.of_sample(
        SAMPLE,
        run_key=key,
        sample_id=sample_id,
        retriever="bm25",
        k=10,
        p=0.9,
        started_at=when,
        rankings=packed(rows),
        before=None if before is None else packed(before),
        compared_id=compared_id,
        index_version="2026-11-30.2",
        package_version="0.1.0",
    )


def test_a_sample_is_stored_once_and_read_back_whole(store: Store) -> None:
    first = store.replays.save_sample(SAMPLE)
    assert store.replays.save_sample(SAMPLE) == first
    found = store.replays.latest_sample("traffic")
    assert found is not None and found[0] == first
    assert found[1] == SAMPLE and found[1].fingerprint == SAMPLE.fingerprint
    assert store.replays.latest_sample("other") is None


def test_replays_chain_and_rankings_round_trip(store: Store) -> None:
    sample_id = store.replays.save_sample(SAMPLE)
    now = datetime.now(UTC)
    first_rows = ranked()
    first_id = store.replays.save(
        record(sample_id, first_rows, None, now - timedelta(days=1), key="a")
    )
    assert store.replays.save(record(sample_id, first_rows, None, now, key="a")) == first_id
    assert store.replays.rankings(first_id) == first_rows
    previous = store.replays.previous(sample_id, "bm25")
    assert previous is not None and previous.id == first_id and previous.state == "first"
    second_rows = ranked(shift=1, error_at=3)
    second_id = store.replays.save(
        record(sample_id, second_rows, store.replays.rankings(first_id), now, first_id, key="b")
    )
    second = store.replays.get(second_id)
    assert second.compared_id == first_id and second.index_version == "2026-11-30.2"
    assert second.error_count == 1 and second.query_count == 5
    assert second.state in {"invalid", "drift", "no_drift"}
    assert second.figures["overall"]["queries"] == 4
    assert [r.id for r in store.replays.history("traffic", "bm25")] == [second_id, first_id]
    # an invalid replay is never the one compared with
    if second.state == "invalid":
        assert store.replays.previous(sample_id, "bm25").id == first_id  # type: ignore[union-attr]


def test_pruning_keeps_the_newest_replay_of_each_series(store: Store) -> None:
    sample_id = store.replays.save_sample(SAMPLE)
    old = datetime.now(UTC) - timedelta(days=90)
    ids = [
        store.replays.save(record(sample_id, ranked(), None, old + timedelta(hours=i), key=f"k{i}"))
        for i in range(3)
    ]
    assert store.runs.prune(30) == Pruned(runs=0, replays=2)
    assert [r.id for r in store.replays.history("traffic", "bm25")] == [ids[-1]]
    assert store.replays.rankings(ids[-1]) == ranked()


def test_a_replay_is_saved_whole_or_not_at_all(store: Store) -> None:
    """One transaction: a ranking the table refuses (its last row has no query key) leaves
    neither the replay's row nor any of its rankings behind, on either backend; two rankings
    of one query are refused before anything is written (the table has no unique key)."""
    import pytest
    from sqlalchemy import func, select

    from retrieval_eval.errors import StoreUnavailableError
    from retrieval_eval.store.schema import replay_ranking, replay_run

    sample_id = store.replays.save_sample(SAMPLE)
    rows = ranked()
    whole = record(sample_id, rows, None, datetime.now(UTC))
    assert whole.comparison.state == "first"  # computed once, for the rankings swapped below
    keyless = [*whole.rankings, whole.rankings[0]._replace(key=None)]
    with pytest.raises(StoreUnavailableError):  # the model would refuse it: swapped in unchecked
        store.replays.save(whole.model_copy(update={"rankings": keyless}))
    with pytest.raises(ValueError, match="two rankings of one query"):
        store.replays.save(record(sample_id, [*rows, rows[0]], None, datetime.now(UTC)))
    with store.engine.connect() as conn:
        counts = [
            conn.execute(select(func.count()).select_from(t)).scalar()
            for t in (replay_run, replay_ranking)
        ]
    assert counts == [0, 0]
    assert store.replays.save(record(sample_id, rows, None, datetime.now(UTC))) > 0


def test_pruning_leaves_no_ranking_without_its_replay(store: Store) -> None:
    """Without a foreign key, prune itself deletes a replay's rankings with it."""
    from sqlalchemy import select

    from retrieval_eval.store.schema import replay_ranking

    sample_id = store.replays.save_sample(SAMPLE)
    old = datetime.now(UTC) - timedelta(days=90)
    ids = [
        store.replays.save(
            record(sample_id, ranked(i), None, old + timedelta(hours=i), key=f"p{i}")
        )
        for i in range(4)
    ]
    store.prune(30)
    with store.engine.connect() as conn:
        left = set(conn.execute(select(replay_ranking.c.replay_id).distinct()).scalars())
    assert left == {ids[-1]}


def test_the_saved_figures_are_the_comparisons_by_name() -> None:
    """A ranking row takes QueryChange's figures by position: the names must line up."""
    from retrieval_eval.replay.compare import QueryChange
    from retrieval_eval.store.replays import CHANGE_FIGURES, COPY_COLUMNS

    assert QueryChange._fields[CHANGE_FIGURES] == COPY_COLUMNS[5:]

"""The one replay model: its JSON (the spool file, the XCom) reads back into the same replay,
whose comparison is computed from it, and a spool file of the first layout reads as one."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from retrieval_eval.replay.record import Ranking, ReplayRecord
from retrieval_eval.replay.samples import QuerySample, SampledQuery
from retrieval_eval.store.spool import read_spool

SAMPLE = QuerySample(
    "traffic",
    "redacted",
    tuple(SampledQuery(f"k{i}", f"query {i} <email>", 5 - i, "head") for i in range(4)),
    log_queries=9,
    log_traffic=30,
)
V1 = Path(__file__).resolve().parent / "spooled_v1" / "replay-191414ff895949ad9b2c11c06a90be22.json"


def _record(**fields: object) -> ReplayRecord:
    return ReplayRecord.of_sample(
        SAMPLE,
        run_key="r1",
        started_at=datetime(2026, 12, 1, tzinfo=UTC),
        retriever="bm25",
        k=3,
        p=0.9,
        rankings=[Ranking(f"k{i}", ("a", "b", "c")[i % 2 :], None) for i in range(4)],
        **fields,
    )


def test_the_json_reads_back_into_the_same_replay_and_comparison() -> None:
    record = _record(
        compare_with="retriever",
        against_retriever="dense",
        before=[Ranking(f"k{i}", ("c", "b", "a"), None) for i in range(3)]
        + [Ranking("k3", (), "TimeoutError: slow")],
    )
    back = ReplayRecord.model_validate_json(record.model_dump_json())
    assert back.model_dump() == record.model_dump() and back.sample == SAMPLE
    assert back.against == "retriever dense" and "against" not in json.loads(back.model_dump_json())
    mine, theirs = record.comparison, back.comparison
    assert (mine.state, mine.errors, mine.overall) == (theirs.state, theirs.errors, theirs.overall)
    assert mine.errors == 1 and mine.overall.queries == 3
    # a view, not a copy: other rankings are compared anew
    moved = record.but(rankings=[Ranking(f"k{i}", ("c", "b", "a"), None) for i in range(4)])
    assert moved.comparison.overall.mean_rbo != mine.overall.mean_rbo


def test_the_first_of_a_series_is_compared_with_nothing() -> None:
    record = _record()
    assert record.against is None and record.comparison.state == "first"


def test_a_spool_file_of_the_first_layout_reads_as_the_one_model() -> None:
    entry = read_spool(V1)
    assert isinstance(entry, ReplayRecord) and entry.version == 1
    assert entry.against_retriever == "bm25_flat" and entry.against == "retriever bm25_flat"
    assert entry.sample.fingerprint and len(entry.sample.queries) == 49
    assert entry.run_date == datetime.fromisoformat("2026-12-04T19:05:27.030994Z")
    assert entry.comparison.state in ("drift", "no_drift")


def test_rankings_join_their_queries_by_key_in_any_order() -> None:
    """A replay keeps the sample's order (a plain zip); rankings in another order still get
    their own query's text, count and bucket, and a key the sample lacks is an error."""
    record = _record()
    shuffled = [Ranking(f"k{i}", ("a",), None) for i in (2, 0, 3, 1)]
    joined = record.ranked(shuffled)
    assert [(r.key, r.text, r.count) for r in joined] == [
        (f"k{i}", f"query {i} <email>", 5 - i) for i in (2, 0, 3, 1)
    ]
    assert record.ranked(record.rankings)[1].ids is record.rankings[1].ids  # shared, not copied
    with pytest.raises(KeyError, match="k9"):
        record.ranked([*shuffled, Ranking("k9", (), None)])

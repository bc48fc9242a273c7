"""Nothing is lost when the store is down: the run is spooled and replayed later."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import InvalidInputError, StoreUnavailableError
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import Store
from retrieval_eval.store.spool import SpooledRun, write_spool
from retrieval_eval.workflows.recording import flush_spool, record_run, replay_spool
from store.builders import hits, make_run

DOWN = "postgresql://eval:pa55-w0rd@127.0.0.1:1/results"  # nothing listens on port 1


def test_an_unreachable_store_spools_the_run(tmp_path: Path) -> None:
    result = make_run(hits(7, 10))
    recorded = record_run(result, store_url=DOWN, thresholds=Thresholds(), spool_dir=tmp_path)
    assert recorded.saved is False and recorded.run_id is None
    assert recorded.spool_path == tmp_path / f"{result.run_key}.json"
    assert recorded.verdict.state == "not_comparable"
    assert "unreachable" in verdict_summary(recorded.verdict)
    assert str(recorded.spool_path) in verdict_summary(recorded.verdict)
    assert "pa55-w0rd" not in recorded.model_dump_json()
    spooled = json.loads(recorded.spool_path.read_text(encoding="utf-8"))
    assert spooled["result"]["run_key"] == result.run_key
    assert "pa55-w0rd" not in recorded.spool_path.read_text(encoding="utf-8")


def test_an_invalid_run_with_the_store_down_is_still_invalid(tmp_path: Path) -> None:
    result = make_run(hits(0, 4, error="timeout"))
    recorded = record_run(result, store_url=DOWN, thresholds=Thresholds(), spool_dir=tmp_path)
    assert recorded.verdict.state == "invalid_run"
    assert recorded.spool_path is not None and recorded.spool_path.is_file()


def test_no_save_with_the_store_down_spools_nothing(tmp_path: Path) -> None:
    recorded = record_run(
        make_run(hits(1, 2)),
        store_url=DOWN,
        thresholds=Thresholds(),
        save=False,
        spool_dir=tmp_path,
    )
    assert recorded.spool_path is None
    assert list(tmp_path.iterdir()) == []


def test_the_default_spool_lives_in_retrieval_eval_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path))
    result = make_run(hits(1, 2))
    recorded = record_run(result, store_url=DOWN, thresholds=Thresholds())
    assert recorded.spool_path == tmp_path / "spool" / f"{result.run_key}.json"


def test_replay_saves_spooled_runs_in_order_and_judges_them(
    tmp_path: Path, store_url: str, store: Store
) -> None:
    strict = Thresholds(max_top1_drop=0.0)
    first, second = make_run(hits(8, 10), day=0), make_run(hits(7, 10), day=1)
    for result in (second, first):  # spooled out of order
        record_run(result, store_url=DOWN, thresholds=strict, spool_dir=tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2

    with pytest.raises(StoreUnavailableError):
        replay_spool(DOWN, tmp_path)
    assert len(list(tmp_path.glob("*.json"))) == 2  # still there

    ids = replay_spool(store_url, tmp_path)
    assert list(tmp_path.glob("*.json")) == []
    stored = [store.get_run(i) for i in ids]
    assert [s.result.run_key for s in stored] == [first.run_key, second.run_key]
    assert stored[0].result.model_dump() == first.model_dump()
    assert stored[0].verdict_state == "baseline"
    # the spooled thresholds (max drop 0) apply: -10 points is a regression
    assert (stored[1].verdict_state, stored[1].baseline_run_id) == ("regression", ids[0])
    assert replay_spool(store_url, tmp_path) == []


def test_replaying_twice_never_duplicates(tmp_path: Path, store_url: str, store: Store) -> None:
    result = make_run(hits(8, 10))
    spool = record_run(result, store_url=DOWN, thresholds=Thresholds(), spool_dir=tmp_path)
    assert spool.spool_path is not None
    copy = spool.spool_path.read_bytes()
    (first,) = replay_spool(store_url, tmp_path)
    spool.spool_path.write_bytes(copy)  # e.g. a replay interrupted before the file was deleted
    assert replay_spool(store_url, tmp_path) == [first]
    assert len(store.history("demo.set", "bm25")) == 1


def test_a_run_spooled_before_replays_were_spooled_still_replays(
    tmp_path: Path, store_url: str, store: Store
) -> None:
    """Files written before the spool held replays have no ``kind``: they are runs."""
    result = make_run(hits(8, 10))
    spool = record_run(result, store_url=DOWN, thresholds=Thresholds(), spool_dir=tmp_path)
    assert spool.spool_path is not None
    data = json.loads(spool.spool_path.read_text(encoding="utf-8"))
    assert data.pop("kind") == "run"
    spool.spool_path.write_text(json.dumps(data), encoding="utf-8")
    (saved,) = replay_spool(store_url, tmp_path)
    assert store.get_run(saved).result.run_key == result.run_key


def test_the_spool_file_is_the_records_spooled_part_and_old_files_still_flush(
    tmp_path: Path, store_url: str, store: Store
) -> None:
    """A spool file holds the record's :class:`SpooledRun` fields, the same JSON: its run, its
    thresholds, the store it was meant for. A file as the first versions wrote it (no kind, no
    store fields) and a whole record's JSON (what the DAG's record task hands on) flush too."""
    from retrieval_eval.workflows.recording import RunRecord

    first, second, third = (make_run(hits(8, 10), day=day) for day in (0, 1, 2))
    record = record_run(first, store_url=DOWN, thresholds=Thresholds(), spool_dir=tmp_path)
    assert isinstance(record, RunRecord) and record.spool_path is not None
    spooled = json.loads(record.spool_path.read_text(encoding="utf-8"))
    ours = json.loads(record.model_dump_json())
    assert spooled == {name: ours[name] for name in SpooledRun.model_fields}
    old = {"result": json.loads(second.model_dump_json()), "thresholds": {}, "version": 1}
    (tmp_path / f"{second.run_key}.json").write_text(json.dumps(old), encoding="utf-8")
    whole = RunRecord.model_validate({**ours, "result": json.loads(third.model_dump_json())})
    (tmp_path / f"{third.run_key}.json").write_text(whole.model_dump_json(), encoding="utf-8")
    ids = replay_spool(store_url, tmp_path)
    assert [store.get_run(i).result.run_key for i in ids] == [
        first.run_key,
        second.run_key,
        third.run_key,
    ]
    assert [store.get_run(i).verdict_state for i in ids] == [
        "baseline",
        "no_regression",
        "no_regression",
    ]


def test_a_broken_spool_file_is_named(tmp_path: Path, store_url: str) -> None:
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"broken\.json: not a readable spooled run"):
        replay_spool(store_url, tmp_path)


def test_a_spool_file_edited_to_hold_a_lone_surrogate_is_named_before_anything_is_saved(
    tmp_path: Path, store_url: str, store: Store
) -> None:
    # validation accepts "\ud800" in a str field; the save would then fail on the encoding
    good = record_run(make_run(hits(7, 10)), store_url=DOWN, thresholds=Thresholds(),
                      spool_dir=tmp_path).spool_path  # fmt: skip
    edited = record_run(make_run(hits(6, 10), day=1), store_url=DOWN, thresholds=Thresholds(),
                        spool_dir=tmp_path).spool_path  # fmt: skip
    assert good is not None and edited is not None and good != edited
    data = json.loads(edited.read_text(encoding="utf-8"))
    data["result"]["retriever"] = "bm25\ud800"
    edited.write_text(json.dumps(data), encoding="utf-8")  # written as the escape \ud800
    with pytest.raises(InvalidInputError, match=r"holds a lone surrogate, '\\ud800', which is"):
        replay_spool(store_url, tmp_path)
    assert (
        store.history(make_run(hits(7, 10)).set_identifier, make_run(hits(7, 10)).retriever) == []
    )


def test_a_backlog_is_replayed_one_run_in_memory_at_a_time(tmp_path: Path) -> None:
    """The peak while replaying four large spooled runs is about the peak for one: each file is
    read, saved and let go before the next (the whole backlog used to be loaded first)."""
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"

    def peak(count: int, folder: Path) -> int:
        for day in range(count):
            run = make_run(hits(200, 500, prefix=f"{folder.name}-{day}-"), day=day)
            write_spool(SpooledRun(result=run, thresholds=Thresholds()), folder)
        tracemalloc.start()
        try:
            assert len(flush_spool(db, folder).ids) == count
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    peak(1, tmp_path / "warm-up")  # the schema, the imports, the caches: not the runs
    one, four = peak(1, tmp_path / "one"), peak(4, tmp_path / "four")
    assert four < 1.5 * one, (one, four)

"""Replays spooled by an earlier retrieval-eval still flush: two spool files written by the code
before the one replay model (``spooled_v1/``: the demo log replayed by ``bm25`` while the store was
down, once compared with the replay before it, once ``--against bm25_flat``) are saved by
``db flush`` into a real SQLite store, compared as they would have been when they ran."""

from __future__ import annotations

import json
import shutil
from datetime import datetime
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store

HERE = Path(__file__).resolve().parent / "spooled_v1"
PREVIOUS = "18d2fb5f0dea4044b609533542528396"  # compared with the replay of its series before it
AGAINST = "191414ff895949ad9b2c11c06a90be22"  # compared with retriever bm25_flat


def test_replays_spooled_by_the_earlier_format_are_compared_and_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    spool = tmp_path / "spool"
    spool.mkdir()
    for path in HERE.glob("replay-*.json"):
        shutil.copy(path, spool / path.name)
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"retrievers": {}}), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"

    done = CliRunner().invoke(
        cli, ["db", "replay", "--db", url, "--spool-dir", str(spool), "--config", str(config)]
    )
    assert done.exit_code == 0, done.output
    assert "saved 2 spooled replay(s)" in done.stdout
    assert not list(spool.glob("replay-*.json"))

    with open_store(url) as store:
        (first,) = store.replays.history("log", "bm25_flat")
        bm25 = {r.run_key: r for r in store.replays.history("log", "bm25")}
        against = bm25[AGAINST]
        previous = bm25[PREVIOUS]
        spooled = json.loads((HERE / f"replay-{AGAINST}.json").read_text(encoding="utf-8"))
        # the other retriever's rankings were saved as its own replay, and compared with
        assert against.compared_id == first.id and against.against == "retriever bm25_flat"
        assert [r.ids for r in store.replays.rankings(first.id)] == [
            tuple(ids) for _key, ids, _error in spooled["before"]
        ]
        assert [r.ids for r in store.replays.rankings(against.id)] == [
            tuple(ids) for _key, ids, _error in spooled["rankings"]
        ]
        assert against.state in ("drift", "no_drift") and against.mean_rbo is not None
        assert against.run_date == datetime.fromisoformat(spooled["started_at"])
        assert (against.k, against.p, against.query_count) == (10, 0.9, 49)
        # spooled earlier than the other: the first of its series, compared with nothing
        assert previous.state == "first" and previous.compared_id is None
        assert previous.sample_id == against.sample_id  # one sample, stored once
        assert store.replays.get(previous.id).package_version == "0.1.0"

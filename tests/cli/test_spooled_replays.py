"""A replay survives a store that is down: spooled (exit 3, the stored form of every query and
no password in the file), then ``db flush`` compares it with the replay of its series before it
and saves it in one transaction, as it would have been saved when it ran.

The store is a real PostgreSQL database that is unreachable for a while: renamed away
(``database ... does not exist``) and renamed back, at the same URL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Database

from cli.replay_configs import CORPUS, LOG, invoke, write_config
from retrieval_eval.store import open_store

PASSWORD = "Secr3t-pw-9"  # trust auth ignores it; it must still never be shown or spooled
DOWN = f"postgresql://eval:{PASSWORD}@127.0.0.1:1/results"  # nothing listens on port 1


@pytest.fixture
def database(pg_url: str) -> Iterator[Database]:
    made = Database(pg_url, PASSWORD)
    made.create()
    yield made
    made.drop()


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = {
        "retrievers": {
            "bm25": {"type": "lexical", "corpus": CORPUS},
            "bm25_flat": {"type": "lexical", "corpus": CORPUS, "k1": 0.3, "b": 0.1},
        },
        # the whole log, redacted: it holds emails and phone numbers
        "samples": {"log": {"source": {"path": LOG}}},
    }
    return write_config(tmp_path, monkeypatch, data)


def _spooled(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "home" / "spool").glob("replay-*.json"))


def test_a_replay_spooled_while_the_store_was_away_is_compared_when_saved(
    config: Path, tmp_path: Path, database: Database
) -> None:
    first = invoke(config, "replay", "log", "bm25", "--db", database.url, "--format", "json")
    assert first.exit_code == 0, first.output
    first_id = json.loads(first.stdout)["replay_id"]

    database.take_away()
    down = invoke(config, "replay", "log", "bm25", "--db", database.url, "--format", "json")
    assert down.exit_code == 3, down.output
    doc = json.loads(down.stdout)  # the report is still printed
    assert doc["replay_id"] is None and doc["state"] == "first"  # compared once it is saved
    (path,) = _spooled(tmp_path)
    assert doc["spool_path"] == str(path) and "db flush" in doc["notes"][0]
    text = path.read_text(encoding="utf-8")
    assert PASSWORD not in down.output and PASSWORD not in text
    assert "jane.doe" not in text and "<email>" in text  # the stored form only
    spooled = json.loads(text)
    assert spooled["kind"] == "replay" and spooled["compare_with"] == "previous"
    still = invoke(config, "db", "replay", "--db", database.url)
    assert still.exit_code == 3 and path.is_file()  # still away: the file stays

    database.give_back()
    saved = invoke(config, "db", "replay", "--db", database.url)
    assert saved.exit_code == 0, saved.output
    assert "saved 1 spooled replay(s)" in saved.stdout
    assert not path.exists()
    with open_store(database.url) as store:
        newest, oldest = store.replays.history("log", "bm25")
        total, page = store.replays.changed_page(newest.id)
    assert oldest.id == first_id
    assert newest.run_key == doc["run_key"] and newest.compared_id == first_id
    assert newest.state == "no_drift" and newest.mean_rbo == pytest.approx(1.0)
    assert total == doc["queries"] and all(q.before == q.ids for q in page)
    again = invoke(config, "db", "replay", "--db", database.url)
    assert again.exit_code == 0 and "no spooled runs" in again.stdout


def test_a_replay_against_another_retriever_keeps_its_comparison(
    config: Path, tmp_path: Path, database: Database
) -> None:
    args = ["replay", "log", "bm25", "--against", "bm25_flat", "--format", "json"]
    down = invoke(config, *args, "--db", DOWN)
    assert down.exit_code == 3, down.output
    doc = json.loads(down.stdout)
    assert doc["against"] == "retriever bm25_flat" and doc["state"] in ("drift", "no_drift")
    (path,) = _spooled(tmp_path)
    assert json.loads(path.read_text())["compare_with"] == "retriever"
    assert "eval:***@127.0.0.1:1" in doc["notes"][0] and PASSWORD not in down.output

    saved = invoke(config, "db", "replay", "--db", database.url)  # another store, explicitly
    assert saved.exit_code == 0, saved.output
    with open_store(database.url) as store:
        (stored,) = store.replays.history("log", "bm25")
    assert stored.against == "retriever bm25_flat" and stored.state == doc["state"]
    assert stored.mean_rbo == pytest.approx(doc["overall"]["mean_rbo"], abs=1e-12)
    assert stored.top1_changed == pytest.approx(doc["overall"]["top1_changed_share"])
    with open_store(database.url) as store:  # the other retriever's rankings are its "before"
        (before,) = store.replays.history("log", "bm25_flat")
        _, page = store.replays.changed_page(stored.id, limit=1000)
    assert stored.compared_id == before.id and before.run_date == stored.run_date
    assert page and all(q.before for q in page if q.ids), [q for q in page if not q.before]


def test_against_run_with_the_store_down_replays_nothing(config: Path, tmp_path: Path) -> None:
    down = invoke(config, "replay", "log", "bm25", "--against-run", "3", "--db", DOWN)
    assert down.exit_code == 3
    assert "--against-run 3 reads a stored replay" in down.output
    assert _spooled(tmp_path) == []


def test_no_save_with_the_store_down_exits_3_and_spools_nothing(
    config: Path, tmp_path: Path
) -> None:
    down = invoke(config, "replay", "log", "bm25", "--no-save", "--db", DOWN)
    assert down.exit_code == 3
    assert _spooled(tmp_path) == []

"""``prune`` and ``baseline accept`` change stored runs but never create a store (a missing
SQLite file, an empty PostgreSQL schema: exit 2, nothing made); and accepting an older run while
a newer good one exists says which run the next comparison uses."""

from __future__ import annotations

from pathlib import Path

import pytest
from store.builders import hits, make_run, pg_schema

from cli.test_cli_core import invoke, isolate_env
from retrieval_eval.store import Store, open_store

WRITERS = [("runs", "accept", "1"), ("runs", "prune", "--older-than", "3")]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_env(monkeypatch, tmp_path)
    return tmp_path


@pytest.mark.parametrize("args", WRITERS, ids=["accept", "prune"])
def test_a_missing_sqlite_store_is_named_not_created(home: Path, args: tuple[str, ...]) -> None:
    path = home / "nope" / "x.sqlite"
    result = invoke(*args, "--db", f"sqlite:///{path}")
    assert result.exit_code == 2, result.output
    assert f"no result store at {path}: the file does not exist" in result.stderr
    assert not path.parent.exists()


@pytest.mark.parametrize("args", WRITERS, ids=["accept", "prune"])
def test_an_empty_postgresql_schema_gets_no_tables(
    home: Path, pg_url: str, args: tuple[str, ...]
) -> None:
    with pg_schema(pg_url) as url:
        result = invoke(*args, "--db", url)
        assert result.exit_code == 2, result.output
        assert "holds no retrieval-eval tables yet" in result.stderr
        with Store(url) as store:
            assert store.revision() is None


def test_accepting_an_older_run_names_the_run_the_next_comparison_uses(home: Path) -> None:
    url = f"sqlite:///{home / 'results.sqlite'}"
    with open_store(url) as store:
        old = store.runs.save(make_run(hits(3, 4), day=0))
        newer = store.runs.save(make_run(hits(3, 4), day=1))  # valid, not a regression
    result = invoke("runs", "accept", str(old), "--db", url)
    assert result.exit_code == 0, result.output
    assert f"the next run will be compared with run {newer}" in result.stdout
    assert f"`retrieval-eval run demo.set bm25 --baseline {old}`" in result.stdout
    with open_store(url) as store:  # what the message says is what the store picks
        picked = store.find_baseline("demo.set", "bm25", "fp-1")
        assert picked is not None and picked.id == newer
        assert store.get_run(old).accepted_baseline
    result = invoke("runs", "accept", str(newer), "--db", url)
    assert result.exit_code == 0
    assert f"run {newer} accepted as baseline for demo.set × bm25" in result.stdout


def test_prune_and_accept_still_write_an_existing_store(home: Path) -> None:
    url = f"sqlite:///{home / 'results.sqlite'}"
    with open_store(url) as store:
        first = store.runs.save(make_run(hits(1, 4), day=0))
    assert invoke("runs", "accept", str(first), "--db", url).exit_code == 0
    result = invoke("runs", "prune", "--older-than", "0", "--db", url)
    assert result.exit_code == 0, result.output
    assert "pruned 0 run(s)" in result.stdout  # the current baseline is kept

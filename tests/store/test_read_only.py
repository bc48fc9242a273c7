"""open_store_to_read: what read-only commands open. It never creates a SQLite file, its folder,
a schema or a table; a missing or empty store is NoStoreError (exit 2) naming it."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect, text

from retrieval_eval.errors import NoStoreError
from retrieval_eval.store import Store, StoreSchemaError, open_store, open_store_to_read
from retrieval_eval.store.names import VERSION_TABLE
from store.builders import hits, make_run


def _tables(url: str) -> list[str]:
    with Store(url) as store, store.engine.connect() as conn:
        return inspect(conn).get_table_names()


def test_a_missing_sqlite_file_is_an_error_and_stays_missing(tmp_path: Path) -> None:
    path = tmp_path / "not-yet" / "results.sqlite"
    with pytest.raises(NoStoreError) as raised:
        open_store_to_read(f"sqlite:///{path}")
    assert raised.value.exit_code == 2
    assert str(path) in str(raised.value) and "retrieval-eval run" in str(raised.value)
    assert not path.parent.exists()  # not even the folder


def test_an_empty_database_gets_no_tables(store_url: str) -> None:
    if store_url.startswith("sqlite"):
        Path(store_url.removeprefix("sqlite:///")).touch()  # an empty file: a database
    with pytest.raises(NoStoreError, match="holds no retrieval-eval tables yet"):
        open_store_to_read(store_url)
    assert _tables(store_url) == []


def test_a_store_at_this_revision_reads_and_another_is_refused(store_url: str) -> None:
    with open_store(store_url) as store:
        run_id = store.runs.save(make_run(hits(3, 4)))
    with open_store_to_read(store_url) as store:
        assert store.get_run(run_id).result.top1_hits == 3
    with Store(store_url) as store, store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = '9999_future'"))
    with pytest.raises(StoreSchemaError, match="9999_future"):
        open_store_to_read(store_url)

"""The SQLite reader (history, show, compare without SQLAlchemy) gives what the Store gives.

The comparison runs on both backends through the CLI's opener: a SQLite store at head is read
by the reader, anything else (PostgreSQL, an empty or older store) by a Store.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import JSON, Boolean, DateTime, insert, text

from retrieval_eval.cli.history_cmd import _open_to_read
from retrieval_eval.errors import NoStoreError, StoreUnavailableError, UnknownNameError
from retrieval_eval.judging.regression import SliceRegression, Verdict
from retrieval_eval.store import Store, StoreSchemaError, open_store
from retrieval_eval.store.migrate import alembic_config
from retrieval_eval.store.reader import _DECODERS, SqliteReader, open_reader
from retrieval_eval.store.schema import eval_result, metadata
from store.builders import hits, make_run, question

REGRESSION = Verdict(
    state="regression",
    baseline_run_id=1,
    top1_delta=-0.25,
    is_regression=True,
    slice_regressions=[
        SliceRegression(
            dimension="form", value="gap", metric="top1", baseline=0.5, current=0.2, delta=-0.3
        )
    ],
    flipped_to_miss=["q000", "q001"],
    p_value=0.25,
    reasons=["top-1"],
    summary="worse",
)


def _fill(store: Store) -> dict[str, int]:
    """Runs with every kind of value a row can hold, and a foreign grader's row."""
    ids = {
        "first": store.save(make_run(hits(3, 4, form="gap", hard_class="paraphrase"), day=0)),
        "errors": store.save(
            make_run(
                [*hits(1, 2), question("e1", False, error="TimeoutError: slow", latency_ms=None)],
                day=1,
                max_error_rate=1.0,
                corpus_revision="rev-2",
            ),
            REGRESSION,
        ),
        "invalid": store.save(make_run(hits(0, 3, error="boom"), day=2)),
        "same_day": store.save(make_run(hits(2, 3), day=2)),  # ties on run_date: id decides
        "other_retriever": store.save(make_run(hits(1, 1), retriever="dense", day=3)),
        "other_set": store.save(make_run(hits(1, 1), set_identifier="other.set", day=3)),
    }
    store.accept_baseline(ids["errors"])
    with store.engine.begin() as conn:
        conn.execute(
            insert(eval_result).values(
                set_identifier="demo.set",
                model_id="bm25",
                grader="answer_quality",
                prompt_count=3,
                passed_count=2,
                details=None,
                run_date=datetime(2030, 1, 1, tzinfo=UTC),
                created_at=datetime(2030, 1, 1, tzinfo=UTC),
            )
        )
    return ids


def test_the_reader_reads_what_the_store_reads(store: Store, store_url: str) -> None:
    ids = _fill(store)
    with _open_to_read(store_url, None) as opened:
        assert isinstance(opened, SqliteReader) == store_url.startswith("sqlite")
        for limit in (1, 2, 50):
            for questions in (True, False):
                args = ("demo.set", "bm25", limit)
                mine = opened.history(*args, questions=questions)
                assert mine == store.history(*args, questions=questions)
        assert [run.id for run in opened.history("demo.set", "bm25")] == [
            ids["same_day"],
            ids["invalid"],
            ids["errors"],
            ids["first"],
        ]
        assert opened.history("demo.set", "bm25", grader="answer_quality") == store.history(
            "demo.set", "bm25", grader="answer_quality"
        )
        for run_id in [*ids.values(), ids["other_set"] + 1]:  # the last: the foreign row
            assert opened.get_run(run_id) == store.get_run(run_id)
        assert (
            opened.retrievers_for("demo.set")
            == store.retrievers_for("demo.set")
            == [
                "bm25",
                "dense",
            ]
        )
        assert opened.retrievers_for("nothing.here") == []
        assert (
            opened.stored_pairs()
            == store.stored_pairs()
            == [("demo.set", "bm25"), ("demo.set", "dense"), ("other.set", "bm25")]
        )
        assert opened.display_url == store.display_url
        with pytest.raises(UnknownNameError, match=r"no stored run with id 999 in "):
            opened.get_run(999)
        with pytest.raises(UnknownNameError, match=r"no stored run with id 3000000000 in "):
            opened.get_run(3_000_000_000)  # beyond the id column, as on PostgreSQL
    stored = store.get_run(ids["errors"])
    assert stored.verdict == REGRESSION and stored.accepted_baseline  # the fill did its job


def test_the_reader_decodes_the_columns_schema_py_types(tmp_path: Path) -> None:
    """JSON, BOOLEAN and DATETIME are decoded by the types the migrations declared: the same
    columns schema.py gives those types to, in every table."""
    path = tmp_path / "results.sqlite"
    open_store(f"sqlite:///{path}").close()
    connection = sqlite3.connect(path)
    for table in metadata.sorted_tables:
        declared = {
            row[1]: str(row[2]).upper()
            for row in connection.execute(f"PRAGMA table_info({table.name})")
        }
        for kind, sa_type in (("JSON", JSON), ("BOOLEAN", Boolean), ("DATETIME", DateTime)):
            typed = {c.name for c in table.columns if isinstance(c.type, sa_type)}
            assert {name for name, t in declared.items() if t == kind} == typed, (table, kind)
    connection.close()
    assert set(_DECODERS) == {"JSON", "BOOLEAN", "DATETIME"}


def _stamp(url: str, revision: str) -> None:
    with Store(url) as store, store.engine.begin() as conn:
        command.upgrade(alembic_config(conn), revision)


def test_anything_but_a_store_at_head_goes_to_the_store(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    url = f"sqlite:///{path}"
    assert open_reader(path) is None  # no file: the command says so, and creates none
    with pytest.raises(NoStoreError, match="the file does not exist"):
        _open_to_read(url, None)
    assert not path.exists()
    path.write_bytes(b"")
    assert open_reader(path) is None  # empty file: no tables, and a reading command adds none
    with pytest.raises(NoStoreError, match="holds no retrieval-eval tables yet"):
        _open_to_read(url, None)
    assert path.read_bytes() == b""
    open_store(url).close()  # what a run does first
    with _open_to_read(url, None) as opened:
        assert isinstance(opened, SqliteReader)
    reader = open_reader(path)
    assert reader is not None
    reader.close()

    older = tmp_path / "older.sqlite"
    _stamp(f"sqlite:///{older}", "0001_initial")
    assert open_reader(older) is None
    with pytest.raises(StoreSchemaError, match=r"'0001_initial'.*retrieval-eval db upgrade"):
        _open_to_read(f"sqlite:///{older}", None)

    junk = tmp_path / "junk.sqlite"
    junk.write_text("not a database", encoding="utf-8")
    assert open_reader(junk) is None  # and open_store says what it says about such a file


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[tuple[Store, Path]]:
    path = tmp_path / "results.sqlite"
    with open_store(f"sqlite:///{path}") as store:
        _fill(store)
        yield store, path


def test_the_reader_changes_nothing(sqlite_store: tuple[Store, Path]) -> None:
    _, path = sqlite_store
    before = path.read_bytes()
    reader = open_reader(path)
    assert reader is not None
    with reader:
        reader.history("demo.set", "bm25")
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            reader._connection.execute("DELETE FROM eval_result")
    assert path.read_bytes() == before


def test_a_failing_read_is_a_store_unavailable_error(sqlite_store: tuple[Store, Path]) -> None:
    store, path = sqlite_store
    reader = open_reader(path)
    assert reader is not None
    with store.engine.begin() as conn:
        conn.execute(text("DROP TABLE eval_result_slice"))
    with reader, pytest.raises(StoreUnavailableError, match="no such table: eval_result_slice"):
        reader.history("demo.set", "bm25")

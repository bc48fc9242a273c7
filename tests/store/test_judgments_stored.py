"""Judgments in the store (0007_judgments): added in one transaction, read back as judgments-file
rows with who wrote them and when, on SQLite and PostgreSQL; prune leaves them alone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from alembic import command
from sqlalchemy import func, inspect, select
from sqlalchemy.exc import IntegrityError

from retrieval_eval.errors import StoreUnavailableError
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import Store
from retrieval_eval.store.migrate import HEAD, alembic_config
from retrieval_eval.store.schema import judgment
from retrieval_eval.verdicts.regression import Verdict
from store.builders import hits, make_run

WHEN = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)
ROWS = [
    Judgment(question_id="q1", document_id="d1", grade=2, rater="ada", time=WHEN, note="close"),
    Judgment(question_id="q1", document_id="d1", grade=1, rater="bob", source="bm25 #2"),
    Judgment(question="what is new?", document_id="d9", grade=3, rater="ada"),
    Judgment(question_id="q2", document_id="d2", grade=None, rater="ada"),  # a skip
]


def test_rows_round_trip_as_judgments_with_writer_and_time(store: Store) -> None:
    before = datetime.now(UTC)
    assert store.judgments.add("s.one", ROWS, channel="import", written_by="alice") == 4
    store.judgments.add("s.two", ROWS[:1], channel="dashboard", written_by="carol")
    stored = store.judgments.stored("s.one")
    assert [s.judgment for s in stored] == ROWS  # order, text, time (timezone-aware), note
    assert {(s.channel, s.written_by) for s in stored} == {("import", "alice")}
    assert all(before - timedelta(seconds=5) <= s.recorded_at <= datetime.now(UTC) for s in stored)
    assert store.judgments.read("s.one") == ROWS[:3]  # skips left out unless asked for
    assert store.judgments.read("s.one", skips=True) == ROWS
    other = store.judgments.stored("s.two")
    assert [(s.judgment, s.channel, s.written_by) for s in other] == [
        (ROWS[0], "dashboard", "carol")
    ]


def test_one_transaction_all_or_nothing(store: Store) -> None:
    """A row the database refuses (a grade out of range, past the model) stores none of them."""
    bad = Judgment.model_construct(
        question_id="q3", question=None, document_id="d3", grade=7, rater="x",
        time=None, note=None, source=None,
    )  # fmt: skip
    with pytest.raises((StoreUnavailableError, IntegrityError)):
        store.judgments.add("s.one", [ROWS[0], bad], channel="import", written_by="alice")
    assert store.judgments.stored("s.one") == []


def test_prune_never_deletes_judgments(store: Store) -> None:
    store.runs.save(make_run(hits(3, 4)), Verdict(state="baseline"))
    store.runs.save(make_run(hits(3, 4), day=1), Verdict(state="baseline"))  # the kept baseline
    store.judgments.add("s.one", ROWS, channel="import", written_by="alice")
    assert store.prune(0) == 1
    with store.engine.connect() as conn:
        assert conn.execute(select(func.count()).select_from(judgment)).scalar_one() == 4


def test_db_upgrade_adds_the_table_to_a_store_of_the_previous_revision(store_url: str) -> None:
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0006_depths")
        assert "judgment" not in inspect(store.engine).get_table_names()
        store.upgrade()
        assert "judgment" in inspect(store.engine).get_table_names()
        assert store.revision() == HEAD

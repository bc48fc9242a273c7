"""Schema creation and upgrades: explicit, idempotent, automatic only on an empty database."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect, text

from retrieval_eval.store import Store, StoreSchemaError, open_store
from retrieval_eval.store.migrate import HEAD, alembic_config, current_revision, head_revision
from retrieval_eval.store.schema import VERSION_TABLE, metadata

TABLES = {"eval_result", "eval_result_question", "eval_result_slice", "eval_alert", VERSION_TABLE}


def test_open_store_creates_the_schema_of_an_empty_database(store_url: str) -> None:
    with open_store(store_url) as store:
        assert store.revision() == head_revision()
        assert set(inspect(store.engine).get_table_names()) >= TABLES


def test_upgrade_is_idempotent(store_url: str) -> None:
    with Store(store_url) as store:
        assert store.revision() is None
        store.upgrade()
        store.upgrade()
        assert store.revision() == head_revision()
        with store.engine.connect() as conn:
            count = conn.execute(text(f"SELECT count(*) FROM {VERSION_TABLE}")).scalar_one()
        assert count == 1


def test_migrations_match_the_table_definitions(store: Store) -> None:
    """schema.py (used by queries) and the migrations (used to create tables) must agree."""
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"compare_type": True})
        diffs = [
            d
            for d in compare_metadata(context, metadata)
            # the version table belongs to Alembic, not to metadata
            if not (d[0] == "remove_table" and d[1].name == VERSION_TABLE)
        ]
    assert diffs == []


def test_indexes_fit_the_lookups(store: Store) -> None:
    indexes = {
        i["name"]: i["column_names"] for i in inspect(store.engine).get_indexes("eval_result")
    }
    assert indexes["ix_eval_result_key_date"] == [
        "set_identifier",
        "model_id",
        "grader",
        "run_date",
    ]
    assert indexes["ix_eval_result_run_date"] == ["run_date"]


def test_a_database_at_an_unknown_revision_is_refused(store: Store, store_url: str) -> None:
    with store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = 'from_the_future'"))
    with pytest.raises(StoreSchemaError, match=r"from_the_future.*retrieval-eval db upgrade"):
        open_store(store_url)


def test_a_foreign_alembic_version_table_is_left_alone(store_url: str) -> None:
    """Airflow's metadata DB has its own alembic_version; sharing the database must work."""
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            conn.execute(text("INSERT INTO alembic_version VALUES ('airflow_head')"))
        store.upgrade()
        with store.engine.connect() as conn:
            assert conn.execute(text("SELECT version_num FROM alembic_version")).all() == [
                ("airflow_head",)
            ]
        assert store.revision() == head_revision()


def test_the_head_constant_is_the_newest_migration() -> None:
    """Opening a store compares with HEAD instead of reading the scripts: a new migration must
    move it."""
    assert head_revision() == HEAD


def _alembic_revision(store: Store) -> str | None:
    with store.engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"version_table": VERSION_TABLE})
        return context.get_current_revision()


def test_the_revision_read_with_plain_sql_is_alembics(store_url: str) -> None:
    with Store(store_url) as store:
        seen = [(store.revision(), _alembic_revision(store))]  # no version table
        with store.engine.begin() as conn:
            conn.execute(text("CREATE TABLE alembic_version (version_num VARCHAR(32) NOT NULL)"))
            conn.execute(text("INSERT INTO alembic_version VALUES ('airflow_head')"))
        seen.append((store.revision(), _alembic_revision(store)))  # someone else's table only
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0001_initial")
        seen.append((store.revision(), _alembic_revision(store)))
        store.upgrade()
        seen.append((store.revision(), _alembic_revision(store)))
        with store.engine.begin() as conn:
            conn.execute(text(f"DELETE FROM {VERSION_TABLE}"))  # stamped back to "base"
            assert current_revision(conn) is None
        seen.append((store.revision(), _alembic_revision(store)))
    assert seen == [
        (None, None),
        (None, None),
        ("0001_initial", "0001_initial"),
        (HEAD, HEAD),
        (None, None),
    ]


def test_a_database_at_an_older_revision_is_refused_until_db_upgrade(store_url: str) -> None:
    with Store(store_url) as store, store.engine.begin() as conn:
        command.upgrade(alembic_config(conn), "0001_initial")
    with pytest.raises(StoreSchemaError, match=r"'0001_initial'.*retrieval-eval db upgrade"):
        open_store(store_url)
    with Store(store_url) as store:
        assert store.revision() == "0001_initial"  # refusing changed nothing
        store.upgrade()
    with open_store(store_url) as store:
        assert store.revision() == HEAD


OPEN = """
import json, sys
from retrieval_eval.store import open_store
with open_store(sys.argv[1]) as store:
    revision = store.revision()
print(json.dumps({"revision": revision, "alembic": "alembic" in sys.modules}))
"""


def test_opening_a_store_at_head_does_not_load_alembic(store: Store, store_url: str) -> None:
    """Alembic costs ~0.1 s of imports: every command opening the store paid it before."""
    done = subprocess.run(
        [sys.executable, "-c", OPEN, store_url],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert json.loads(done.stdout) == {"revision": HEAD, "alembic": False}

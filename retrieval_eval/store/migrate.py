"""Schema creation and upgrades with Alembic, run programmatically (no alembic.ini needed).

The migration scripts ship inside the package (``store/migrations``). Upgrading is idempotent and
runs in one transaction; on PostgreSQL an advisory lock makes concurrent first runs wait for each
other instead of racing to create the same tables. The version table is
``retrieval_eval_alembic_version``, so the store can share a database with other Alembic users
(Airflow's metadata database has its own ``alembic_version``).

Opening a store only reads the version table (:func:`current_revision`, plain SQL) and compares
it with :data:`HEAD`: Alembic (its imports, and reading every migration script) is loaded
only to create or upgrade the schema. ``tests/store/test_schema.py`` pins :data:`HEAD` to the
head of the migration scripts, so a new migration cannot forget it.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy import Connection, inspect, text

from retrieval_eval.store.names import HEAD as HEAD
from retrieval_eval.store.names import VERSION_TABLE

if TYPE_CHECKING:
    from alembic.config import Config as AlembicConfig
    from sqlalchemy.engine import Engine

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# any constant bigint; identifies "retrieval-eval schema upgrade" among advisory locks
_PG_LOCK_KEY = 0x52455645  # "REVE"


def alembic_config(connection: Connection | None = None) -> AlembicConfig:
    from alembic.config import Config as AlembicConfig

    config = AlembicConfig()
    # ConfigParser interpolation: a '%' in the install path must be doubled
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    """The head of the migration scripts, as Alembic reads them (the store uses :data:`HEAD`)."""
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision stamped in the database, or None for a database this tool never touched.

    Read with plain SQL, as Alembic's ``MigrationContext.get_current_revision`` would: no
    version table, or an empty one, is None. Several rows (branches, which this tool never
    makes) come back joined, a revision no version of it knows.
    """
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE}")).scalars().all()
    return ", ".join(sorted(rows)) if rows else None


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision; a no-op when it is already there."""
    from alembic import command

    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        command.upgrade(alembic_config(connection), "head")

"""Schema creation and upgrades with Alembic, run programmatically (no alembic.ini needed).

The migration scripts ship inside the package (``store/migrations``). Upgrading is idempotent and
runs in one transaction; on PostgreSQL an advisory lock makes concurrent first runs wait for each
other instead of racing to create the same tables. The version table is
``retrieval_eval_alembic_version``, so the store can share a database with other Alembic users
(Airflow's metadata database has its own ``alembic_version``).
"""

from __future__ import annotations

from pathlib import Path

from alembic import command
from alembic.config import Config as AlembicConfig
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

from retrieval_eval.store.schema import VERSION_TABLE

MIGRATIONS = Path(__file__).resolve().parent / "migrations"
# any constant bigint; identifies "retrieval-eval schema upgrade" among advisory locks
_PG_LOCK_KEY = 0x52455645  # "REVE"


def alembic_config(connection: Connection | None = None) -> AlembicConfig:
    config = AlembicConfig()
    # ConfigParser interpolation: a '%' in the install path must be doubled
    config.set_main_option("script_location", str(MIGRATIONS).replace("%", "%%"))
    if connection is not None:
        config.attributes["connection"] = connection
    return config


def head_revision() -> str | None:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()


def current_revision(connection: Connection) -> str | None:
    """The revision stamped in the database, or None for a database this tool never touched."""
    context = MigrationContext.configure(connection, opts={"version_table": VERSION_TABLE})
    return context.get_current_revision()


def upgrade(engine: Engine) -> None:
    """Bring the schema to the newest revision; a no-op when it is already there."""
    with engine.begin() as connection:
        if connection.dialect.name == "postgresql":
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _PG_LOCK_KEY})
        command.upgrade(alembic_config(connection), "head")

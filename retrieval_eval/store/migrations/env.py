"""Alembic environment, driven programmatically by :mod:`retrieval_eval.store.migrate`.

The caller opens the connection (and its transaction, with a lock on PostgreSQL) and passes it in
``config.attributes["connection"]``; no alembic.ini is needed on the user's side.
"""

from __future__ import annotations

from alembic import context

from retrieval_eval.store.schema import VERSION_TABLE, metadata

connection = context.config.attributes.get("connection")
if connection is None:  # pragma: no cover - only reachable by running alembic by hand
    raise RuntimeError(
        "run migrations through retrieval_eval.store.migrate (retrieval-eval db upgrade)"
    )

context.configure(
    connection=connection,
    target_metadata=metadata,
    version_table=VERSION_TABLE,
    render_as_batch=connection.dialect.name == "sqlite",  # SQLite can't ALTER most things
)
with context.begin_transaction():
    context.run_migrations()

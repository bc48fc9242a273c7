"""Names the store layer shares without importing SQLAlchemy (the SQLite reader needs them too).

``schema.py`` and ``migrate.py`` re-export them; ``tests/store/test_schema.py`` pins ``HEAD`` to
the head of the migration scripts.
"""

from __future__ import annotations

GRADER = "retrieval_hit_rate"  # this tool's rows in the shared eval_result table
VERSION_TABLE = "retrieval_eval_alembic_version"  # not "alembic_version": Airflow's DB has one
HEAD = "0002_alert_markers"  # the newest migration: the revision this version reads and writes

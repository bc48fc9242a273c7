"""Names the store layer shares without importing SQLAlchemy (the CLI checks run ids with them).

``schema.py`` and ``migrate.py`` re-export them; ``tests/store/test_schema.py`` pins ``HEAD`` to
the head of the migration scripts.
"""

from __future__ import annotations

from retrieval_eval import DISTRIBUTION

GRADER = "retrieval_hit_rate"  # this tool's rows in the shared eval_result table
VERSION_TABLE = "retrieval_eval_alembic_version"  # not "alembic_version": Airflow's DB has one
HEAD = "0011_model_judges"  # the newest migration: the revision this version reads and writes
# every revision of the migration scripts, oldest first: one outside it was made by a newer version
KNOWN_REVISIONS = (
    "0001_initial",
    "0002_alert_markers",
    "0003_replays",
    "0004_question_listing",
    "0005_run_versions",
    "0006_depths",
    "0007_judgments",
    "0008_grades",
    "0009_rejudged",
    "0010_replay_rows",
    HEAD,
)
MAX_RUN_ID = 2**31 - 1  # eval_result.id is a 32-bit INTEGER; PostgreSQL rejects larger values
# a sampled query's count and a log's summed counts are 32-bit INTEGER columns too
MAX_COUNT = 2**31 - 1

# what a read-only command says when there is no store yet (it never creates one)
CREATE_HINT = (
    "the first `retrieval-eval run SET RETRIEVER` creates it (or `retrieval-eval db upgrade`); "
    "or point --db or $RETRIEVAL_EVAL_DB at an existing store"
)


def newer_revision(where: str, revision: str) -> str:
    """The message for a store migrated by a newer retrieval-eval than this one."""
    return (
        f"the result store at {where} has schema revision {revision!r}, which this version of "
        f"retrieval-eval does not know (it reads {HEAD!r}): a newer retrieval-eval migrated it; "
        f"upgrade the retrieval-eval package (pip install --upgrade {DISTRIBUTION}) to use it "
        "(`retrieval-eval db upgrade` never downgrades a store)"
    )


def no_store_file(path: object) -> str:
    """The message for a SQLite store file that does not exist."""
    return f"no result store at {path}: the file does not exist; {CREATE_HINT}"


def storable_run_id(run_id: int) -> bool:
    """Whether ``run_id`` could name a stored run at all (ids run from 1 to MAX_RUN_ID)."""
    return 1 <= run_id <= MAX_RUN_ID


def compared_baseline(status: str, baseline_run_id: int | None) -> int | None:
    """The baseline run a stored run was compared with, as every read reports it: None for an
    invalid run, which is never compared (rows stored before that rule still carry an id)."""
    return baseline_run_id if status == "valid" else None

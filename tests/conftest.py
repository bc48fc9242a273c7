"""Shared fixtures: real PostgreSQL, the shared data collections, the demo config."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from helpers import DEFAULT_PG, EXAMPLES, PG_ENV, ROOT, required

# hooks: the order of the modules and how xdist shares them out (tests/scheduling.py says why)
from scheduling import pytest_collection_modifyitems, pytest_xdist_make_scheduler  # noqa: F401

# Airflow reads its configuration when first imported: give each test process a throwaway
# AIRFLOW_HOME (never ~/airflow), no example DAGs, and this project's dags/ folder. xdist's
# workers inherit the controller's environment, and the controller imports this file first:
# a home it made here would be one metadata DB that two workers migrate at once (a race that
# fails ``airflow db migrate``), so a worker replaces each home the session made with its own.
MADE_HOMES = "_RETRIEVAL_EVAL_TEST_HOMES"  # the homes this file made, "VAR=path" by os.pathsep


def _own_home(var: str, prefix: str) -> None:
    """Set ``var`` to a fresh temporary folder unless the user set it; a worker given the
    controller's folder (listed in :data:`MADE_HOMES`) gets one of its own."""
    made = dict(
        entry.split("=", 1) for entry in os.environ.get(MADE_HOMES, "").split(os.pathsep) if entry
    )
    inherited = made.get(var) is not None and os.environ.get(var) == made[var]
    if var in os.environ and not (inherited and os.environ.get("PYTEST_XDIST_WORKER")):
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    os.environ[var] = tempfile.mkdtemp(prefix=f"{prefix}{worker}-")
    made[var] = os.environ[var]
    os.environ[MADE_HOMES] = os.pathsep.join(f"{k}={v}" for k, v in made.items())


_own_home("AIRFLOW_HOME", "retrieval-eval-airflow-")
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(ROOT / "dags"))
# keep results of tests out of the user's default store and spool (one home per worker too)
_own_home("RETRIEVAL_EVAL_HOME", "retrieval-eval-home-")
# nothing reaches a model hub or a telemetry service: models load from disk (the dense model
# package ships its weights), and Haystack's and Chroma's usage reports are off
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")
os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")


@pytest.fixture(scope="session")
def pg_url() -> str:
    """A reachable PostgreSQL URL; skipped with a reason where there is none (a failure in CI)."""
    url = os.environ.get(PG_ENV, DEFAULT_PG)
    try:
        import psycopg

        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute("select 1")
    except Exception as exc:
        reason = f"PostgreSQL unreachable at ${PG_ENV} (default {DEFAULT_PG}): {type(exc).__name__}"
        if required("RETRIEVAL_EVAL_REQUIRE_PG"):
            pytest.fail(reason + " — RETRIEVAL_EVAL_REQUIRE_PG is set, so this is a failure")
        pytest.skip(reason)
    return url


@pytest.fixture
def demo_config() -> Path:
    return EXAMPLES / "retrieval_eval.yaml"

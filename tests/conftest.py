"""Shared fixtures: real PostgreSQL, the shared data collections, the demo config."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from helpers import DEFAULT_PG, EXAMPLES, PG_ENV, ROOT, required

# hooks: the order of the modules and how xdist shares them out (tests/scheduling.py says why)
from scheduling import pytest_collection_modifyitems, pytest_xdist_make_scheduler  # noqa: F401

# Airflow reads its configuration when first imported: give the whole test session a throwaway
# AIRFLOW_HOME (never ~/airflow), no example DAGs, and this project's dags/ folder.
os.environ.setdefault("AIRFLOW_HOME", tempfile.mkdtemp(prefix="retrieval-eval-airflow-"))
os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "False")
os.environ.setdefault("AIRFLOW__CORE__DAGS_FOLDER", str(ROOT / "dags"))
# keep results of tests out of the user's default store and spool
os.environ.setdefault("RETRIEVAL_EVAL_HOME", tempfile.mkdtemp(prefix="retrieval-eval-home-"))
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

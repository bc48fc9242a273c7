"""Dashboard test plumbing: stores filled by real runs, real Airflow JWTs, a real HTTP server.

- ``filled``: a store on SQLite and on PostgreSQL (own schema, dropped afterwards) holding real
  evaluations of the demo recorded through ``record_run`` (see ``fill.py``), built once per backend;
  ``busy_sqlite``: long runs with regressions, an accepted baseline and an invalid run (``busy.py``).
- ``mint_token``: signs JWTs with Airflow's own auth manager (the simple auth manager) in this
  process, against the session's throwaway AIRFLOW_HOME (tests/conftest.py); Airflow checks every
  token's id against its ``revoked_token`` table, so the metadata DB is migrated first when needed.
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from store.builders import pg_schema

from retrieval_eval.webui.app import create_app
from webui.browsing import launched_chromium
from webui.busy import Busy, fill_busy
from webui.fill import Filled, fill

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "retrieval_eval.yaml"
SIMPLE_AUTH_MANAGER = (
    "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
)


@pytest.fixture(scope="session")
def filled_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Filled:
    """A SQLite store of real runs, for the tests that need one backend only."""
    path = tmp_path_factory.mktemp("webui_store") / "results.sqlite"
    return fill(f"sqlite:///{path}", CONFIG)


@pytest.fixture
def store_copy(filled_sqlite: Filled, tmp_path: Path) -> str:
    """A copy of the filled SQLite store that a test may write judgments into."""
    path = tmp_path / "results.sqlite"
    shutil.copy(filled_sqlite.url.removeprefix("sqlite:///"), path)
    return f"sqlite:///{path}"


@pytest.fixture(scope="session")
def busy_sqlite(tmp_path_factory: pytest.TempPathFactory) -> Busy:
    """A SQLite store of long runs with every kind of run mark (see ``busy.py``)."""
    return fill_busy(f"sqlite:///{tmp_path_factory.mktemp('busy_store') / 'results.sqlite'}")


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def filled(request: pytest.FixtureRequest) -> Iterator[Filled]:
    """A store of real runs on each backend (built once per backend for the session)."""
    if request.param == "sqlite":
        yield request.getfixturevalue("filled_sqlite")
        return
    with pg_schema(request.getfixturevalue("pg_url")) as url:
        yield fill(url, CONFIG)


def _ensure_metadata_db() -> None:
    """Migrate the session's Airflow metadata DB unless it already has the revoked_token table."""
    from airflow import settings
    from sqlalchemy import inspect

    if settings.engine is not None and inspect(settings.engine).has_table("revoked_token"):
        return
    airflow = Path(sys.executable).parent / "airflow"
    subprocess.run([str(airflow), "db", "migrate"], check=True, capture_output=True)


@pytest.fixture(scope="session")
def mint_token() -> Iterator[Callable[..., str]]:
    """``mint_token(username="reader", role="viewer", expires_in=3600)`` -> a signed Airflow JWT."""
    saved = {
        k: os.environ.get(k)
        for k in ("AIRFLOW__API_AUTH__JWT_SECRET", "AIRFLOW__CORE__AUTH_MANAGER")
    }
    os.environ["AIRFLOW__API_AUTH__JWT_SECRET"] = secrets.token_urlsafe(64)
    os.environ["AIRFLOW__CORE__AUTH_MANAGER"] = SIMPLE_AUTH_MANAGER
    _ensure_metadata_db()
    from airflow.api_fastapi.app import init_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    manager = init_auth_manager()

    def mint(username: str = "reader", role: str = "viewer", expires_in: int = 3600) -> str:
        user = SimpleAuthManagerUser(username=username, role=role)
        return manager.generate_jwt(user, expiration_time_in_seconds=expires_in)

    try:
        yield mint
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


@pytest.fixture(scope="session")
def token(mint_token: Callable[..., str]) -> str:
    return mint_token()


@pytest.fixture
def client(filled: Filled, token: str) -> Iterator[TestClient]:
    """The dashboard (auth required, as the plugin mounts it) with a valid bearer token."""
    app = create_app(filled.url)
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as test_client:
        yield test_client
    app.state.store_source.close()


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Headless Chromium, one launch a module (skipped where it is absent, see ``browsing.py``):
    each test opens its own context, so no cookie or page outlives it."""
    with launched_chromium() as launched:
        yield launched

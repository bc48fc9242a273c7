"""The store connection as docs/operations/airflow.md creates it: `airflow connections add --conn-type postgres`.

Without the postgres provider that command silently stores a `generic` connection; the provider
is in the `airflow` extra, and the DAG's store lookup refuses any other type by name. The stored
connection's URI (as `airflow connections get` renders it) is handed to the lookup as an
`AIRFLOW_CONN_*` variable: outside a task, the SDK's hooks read no metadata database.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from dag_helpers import BIN

pytestmark = pytest.mark.airflow

LOOKUP = """
import json, sys
from retrieval_eval.airflow.tasks import store_url
try:
    print(json.dumps({"url": store_url({"config_path": None, "store_connection_id": sys.argv[1]})}))
except Exception as exc:
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}))
"""


def _airflow(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=120
    )


def _lookup(env: dict[str, str], conn_id: str) -> tuple[dict[str, str], dict[str, str]]:
    """(the connection as ``airflow connections get`` shows it, what the store lookup made of it)"""
    shown = json.loads(_airflow(env, "connections", "get", conn_id, "-o", "json").stdout)[0]
    uri = shown["get_uri"]
    done = subprocess.run(
        [sys.executable, "-c", LOOKUP, conn_id],
        env={**env, f"AIRFLOW_CONN_{conn_id.upper()}": uri},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return shown, json.loads(done.stdout.strip().splitlines()[-1])


def test_a_postgres_connection_made_by_the_cli_is_the_store(airflow_env: dict[str, str]) -> None:
    added = _airflow(
        airflow_env,
        "connections", "add", "re_store_cli",
        "--conn-type", "postgres", "--conn-host", "db.internal", "--conn-port", "5432",
        "--conn-schema", "results", "--conn-login", "eval", "--conn-password", "pw-Secret-9",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr[-2000:]
    shown, found = _lookup(airflow_env, "re_store_cli")
    assert shown["conn_type"] == "postgres"
    assert found == {"url": "postgresql+psycopg://eval:pw-Secret-9@db.internal:5432/results"}


def test_a_connection_of_another_type_is_refused_by_name(airflow_env: dict[str, str]) -> None:
    added = _airflow(
        airflow_env,
        "connections", "add", "re_store_generic",
        "--conn-type", "generic", "--conn-host", "db.internal", "--conn-password", "pw-Secret-9",
    )  # fmt: skip
    assert added.returncode == 0, added.stderr[-2000:]
    error = _lookup(airflow_env, "re_store_generic")[1]["error"]
    assert "Airflow connection 're_store_generic'" in error
    assert "has type 'generic'" in error and "'postgres' connection" in error
    assert "pw-Secret-9" not in error

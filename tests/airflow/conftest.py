"""Airflow fixtures: one migrated metadata DB per session (helpers live in dag_helpers.py)."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import pytest
from dag_helpers import BIN, HERE, ROOT, stop_plan_runners


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Environment for a real Airflow on SQLite in a fresh AIRFLOW_HOME (migrated once); the
    plan processes that ran DAGs in it end with the session."""
    home = tmp_path_factory.mktemp("airflow_home")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
        # the tests' retrievers (tests/airflow) and helpers (tests/), for every plan process
        "PYTHONPATH": os.pathsep.join(
            [str(HERE), str(HERE.parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    subprocess.run(
        [str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True
    )
    yield env
    stop_plan_runners()

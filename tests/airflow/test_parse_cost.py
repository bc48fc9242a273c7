"""Parsing the DAG file is cheap: it happens in the dag-processor and in every task process.

Measured in a fresh interpreter, since a module imported once stays imported: after what any
DAG file needs (``airflow.sdk``, which itself brings SQLAlchemy and rich), importing ours adds
no pandas, SQLAlchemy, Alembic, rich, numpy or adapter module. Its time is a benchmark
(``benchmarks/dag_parse.py``), not a test.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from dag_helpers import ROOT

pytestmark = pytest.mark.airflow

PROBE = """
import json, runpy, sys
import airflow.sdk
before = set(sys.modules)
runpy.run_path(sys.argv[1])
print(json.dumps({"added": sorted(set(sys.modules) - before), "all": sorted(sys.modules)}))
"""
HEAVY = ("pandas", "sqlalchemy", "alembic", "rich", "numpy", "bm25s", "urllib3", "psycopg")
CORE_AT_RUN_TIME = (
    "retrieval_eval.results",
    "retrieval_eval.scoring",
    "retrieval_eval.store",
    "retrieval_eval.recording",
    "retrieval_eval.runner",
    "retrieval_eval.golden.loaders",
    "retrieval_eval.retrievers.registry",
    "retrieval_eval.airflow.steps",
)


def _modules(env: dict[str, str]) -> dict[str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE, str(ROOT / "dags" / "retrieval_eval_dags.py")],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("configured", [False, True])
def test_the_dag_file_imports_nothing_heavy(airflow_env: dict[str, str], configured: bool) -> None:
    env = dict(airflow_env)
    env.pop("RETRIEVAL_EVAL_CONFIG", None)
    if configured:
        env["RETRIEVAL_EVAL_CONFIG"] = str(ROOT / "examples" / "retrieval_eval.yaml")
    found = _modules(env)
    added = found["added"]
    assert "retrieval_eval.airflow.factory" in added  # the file did build its DAGs
    for name in HEAVY:
        assert not any(m == name or m.startswith(name + ".") for m in added), name
    assert "pandas" not in found["all"] and "alembic" not in found["all"]
    for name in CORE_AT_RUN_TIME:
        assert name not in added, name
    adapters = [m for m in added if m.startswith("retrieval_eval.retrievers.")]
    assert adapters == []

"""The CLI and the DAG store the same thing: two labelled runs and two replays, once through
``retrieval-eval`` and once through ``dag.test()``, leave equal rows in their stores.

Left out of the comparison: row ids' order is the same in both stores (each starts empty), so ids
stay in; what differs by nature is left out: when it ran (``created_at``, ``run_date``,
``finished_at``), how long it took (latencies), and the run key (a random one for the CLI, the DAG
run's id for Airflow). The DAG's lint task stores its findings with the run (``details.lint``),
which ``run`` does not compute: that difference is asserted, not hidden.
"""

from __future__ import annotations

import json
import sqlite3
from contextlib import suppress
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from dag_helpers import EXAMPLES, run_plan

from retrieval_eval.cli import cli

pytestmark = pytest.mark.airflow
RUN_DAG = "retrieval_eval__handbook_demo__handbook_bm25"
REPLAY_DAG = "retrieval_eval_replay__top__handbook_bm25"
# what differs by nature between two runs of the same thing
BY_NATURE = {"created_at", "run_date", "updated_at", "finished_at", "run_key"}


def _config(path: Path, store: Path) -> Path:
    data = {
        "store": f"sqlite:///{store}",
        "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {"handbook_bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
        "evaluations": [
            {
                "set": "handbook.demo",
                "retriever": "handbook_bm25",
                "max_batches": 2,
                "min_batch_questions": 1,
            }
        ],
        "samples": {
            "top": {
                "source": {"path": str(EXAMPLES / "logs" / "queries.jsonl")},
                "method": "top",
                "size": 12,
                "casefold": True,
            }
        },
        "replays": [
            {"sample": "top", "retriever": "handbook_bm25", "max_batches": 3},
        ],
        "airflow": {"retries": 0},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def _comparable(value: Any) -> Any:
    """A stored value with what differs by nature taken out (JSON documents opened)."""
    if isinstance(value, str) and value[:1] in "[{":
        with suppress(ValueError):  # a JSON column; else text that starts so
            value = json.loads(value)
    if isinstance(value, dict):
        return {
            k: _comparable(v)
            for k, v in value.items()
            if k not in BY_NATURE and "latency" not in k and not k.endswith("_ms")
        }
    if isinstance(value, list):
        return [_comparable(v) for v in value]
    return value


def _rows(store: Path) -> dict[str, list[dict[str, Any]]]:
    with sqlite3.connect(store) as db:
        tables = [
            name
            for (name,) in db.execute("select name from sqlite_master where type = 'table'")
            if not name.startswith("sqlite_")
        ]
        found = {}
        for table in sorted(tables):
            cursor = db.execute(f"select * from {table} order by rowid")
            columns = [c[0] for c in cursor.description]
            found[table] = [_comparable(dict(zip(columns, row, strict=True))) for row in cursor]
    return found


def test_the_cli_and_the_dag_store_equal_runs_and_replays(
    airflow_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    by_cli, by_dag = tmp_path / "cli.sqlite", tmp_path / "dag.sqlite"
    cli_config = _config(tmp_path / "cli.yaml", by_cli)
    dag_config = _config(tmp_path / "dag.yaml", by_dag)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    for _night in range(2):  # a baseline, then a run compared with it; a first replay, then one
        for args in (["run", "handbook.demo", "handbook_bm25"], ["replay", "top", "handbook_bm25"]):
            done = CliRunner().invoke(cli, [*args, "--config", str(cli_config)])
            assert done.exit_code == 0, done.output
    night = [{"dag_id": RUN_DAG}, {"dag_id": REPLAY_DAG}]
    outcomes, log = run_plan(
        {**airflow_env, "RETRIEVAL_EVAL_CONFIG": str(dag_config)}, night + night, tmp_path
    )
    assert [o["state"] for o in outcomes] == ["success"] * 4, log

    cli_rows, dag_rows = _rows(by_cli), _rows(by_dag)
    lint = [row["details"].pop("lint") for row in dag_rows["eval_result"]]
    assert all(found["mode"] == "warn" and found["findings"] for found in lint)  # the DAG's task
    assert all(row["details"].pop("lint") is None for row in cli_rows["eval_result"])
    assert [len(cli_rows[t]) for t in ("eval_result", "replay_run", "replay_ranking")] == [2, 2, 24]
    assert [r["verdict_state"] for r in cli_rows["eval_result"]] == ["baseline", "no_regression"]
    for table in cli_rows.keys() | dag_rows.keys():
        assert cli_rows.get(table) == dag_rows.get(table), table

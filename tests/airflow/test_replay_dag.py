"""A replay DAG run with dag.test(): the first replay, then one against itself (no drift), then
one after the index lost its documents (drift, alerted once, failed with fail_on_drift)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES, run_plan

from retrieval_eval.store import open_store

pytestmark = pytest.mark.airflow
DAG_ID = "retrieval_eval_replay__top__bm25"


def config(path: Path, store: str, corpus: Path, fail_on_drift: bool = False) -> Path:
    data = {
        "store": store,
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(corpus)}},
        "samples": {
            "top": {
                "source": {"path": str(EXAMPLES / "logs" / "queries.jsonl")},
                "method": "top",
                "size": 12,
                "casefold": True,
            }
        },
        "replays": [
            {
                "sample": "top",
                "retriever": "bm25",
                "max_batches": 3,
                "min_batch_questions": 1,
                "fail_on_drift": fail_on_drift,
            }
        ],
        "airflow": {"retries": 0, "ui_base_url": "http://airflow.example/retrieval-eval"},
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def test_replay_dag_first_same_then_drift(airflow_env: dict[str, str], tmp_path: Path) -> None:
    import shutil

    store = f"sqlite:///{tmp_path / 'store.sqlite'}"
    shrunk = tmp_path / "corpus"
    shutil.copytree(EXAMPLES / "corpus", shrunk)
    for folder in ("billing", "account"):
        shutil.rmtree(shrunk / folder)
    full = config(tmp_path / "full.yaml", store, EXAMPLES / "corpus")
    small = config(tmp_path / "small.yaml", store, shrunk, fail_on_drift=True)
    outcomes, log = run_plan(
        airflow_env,
        [
            {"dag_id": DAG_ID, "env": {"RETRIEVAL_EVAL_CONFIG": str(full)}},
            {"dag_id": DAG_ID},
            {"dag_id": DAG_ID, "env": {"RETRIEVAL_EVAL_CONFIG": str(small)}},
        ],
        tmp_path,
    )
    first, same, drifted = outcomes
    assert "sample top: 12 queries in 3 batches" in log
    assert first["state"] == "success" and first["tasks"]["no_drift"] == "success"
    assert sum(1 for t in first["tasks"] if t.startswith("replay[")) == 3
    assert same["state"] == "success" and same["tasks"]["no_drift"] == "success"
    assert drifted["state"] == "failed" and drifted["tasks"]["alert_drift"] == "failed"
    assert drifted["tasks"]["no_drift"] == "skipped"
    with open_store(store) as opened:
        rows = opened.replays.history("top", "bm25")
    assert [r.state for r in rows] == ["drift", "no_drift", "first"]
    assert rows[1].mean_rbo == pytest.approx(1.0)
    assert rows[0].mean_rbo is not None and rows[0].mean_rbo < 0.8
    assert rows[0].compared_id == rows[1].id

"""A set larger than Airflow's max_map_length (1024) still runs: the fan-out is over batches."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import run_dag, write_config

pytestmark = [pytest.mark.airflow, pytest.mark.slow]


def test_set_larger_than_max_map_length(airflow_env: dict[str, str], tmp_path: Path) -> None:
    count = 1500
    golden = tmp_path / "big.yaml"
    golden.write_text(
        yaml.safe_dump(
            {
                "identifier": "handbook.demo",
                "questions": [
                    {
                        "id": f"q{i}",
                        "question": f"refund policy annual plan {i}",
                        "form": "match" if i % 2 else "gap",
                        "expected_document_ids": ["billing/refunds.md"],
                    }
                    for i in range(count)
                ],
            }
        )
    )
    store = f"sqlite:///{tmp_path / 'r.sqlite'}"
    config = write_config(
        tmp_path / "c.yaml", store=store, retriever="handbook_bm25", golden=golden
    )
    data = yaml.safe_load(config.read_text())
    data["evaluations"][0]["max_batches"] = 6
    config.write_text(yaml.safe_dump(data))
    outcome = run_dag(
        airflow_env,
        "retrieval_eval__handbook_demo__handbook_bm25",
        extra_env={"RETRIEVAL_EVAL_CONFIG": str(config)},
    )
    assert outcome["state"] == "success", outcome["log"][-3000:]
    assert len([k for k in outcome["tasks"] if k.startswith("retrieve[")]) == 6

    from retrieval_eval.store import open_store

    store_ = open_store(store)
    try:
        (run,) = store_.history("handbook.demo", "handbook_bm25")
    finally:
        store_.close()
    assert run.result.question_count == count

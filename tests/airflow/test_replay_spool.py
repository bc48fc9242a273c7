"""A replay DAG whose store goes away before its join_batches task: the replay is spooled
(nothing lost, no password), compare_and_save fails for a retry saying where the replay went, and
``db flush`` later compares and saves it exactly as it does a replay the CLI spooled
(``tests/cli/test_spooled_replays.py``).

Real parts: a PostgreSQL database of the test's own, renamed away by the retriever's first
answer (the replay task has read its sample by then) and renamed back before ``db flush``;
Airflow's ``dag.test()``; the CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from cli.replay_configs import invoke
from dag_helpers import EXAMPLES, run_plan
from helpers import Database

from retrieval_eval.store import open_store

pytestmark = pytest.mark.airflow
RETRIEVER = "switchable_retrievers:TakesTheStoreAway"
DAG_ID = "retrieval_eval_replay__top__switchable_retrievers_TakesTheStoreAway"
PASSWORD = "Dag-Secr3t-7"  # trust auth ignores it; it must never be logged or spooled


def test_a_replay_whose_store_went_away_is_spooled_then_saved_by_db_replay(
    airflow_env: dict[str, str],
    tmp_path: Path,
    pg_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    database = Database(pg_url, PASSWORD)
    database.create()
    try:
        config = tmp_path / "replay.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "store": database.url,
                    "samples": {
                        "top": {
                            "source": {"path": str(EXAMPLES / "logs" / "queries.jsonl")},
                            "method": "top",
                            "size": 12,
                        }
                    },
                    # one batch: the replay task reads the sample once, before the first answer
                    "replays": [{"sample": "top", "retriever": RETRIEVER, "max_batches": 1}],
                    "airflow": {"retries": 0},
                }
            ),
            encoding="utf-8",
        )
        home = tmp_path / "home"
        env = {
            **airflow_env,
            "RETRIEVAL_EVAL_CONFIG": str(config),
            "RETRIEVAL_EVAL_HOME": str(home),
        }
        away_env = {"RE_TAKE_AWAY": f"{pg_url} {database.name}"}
        plan = [{"dag_id": DAG_ID}, {"dag_id": DAG_ID, "env": away_env}]
        (first, away), log = run_plan(env, plan, tmp_path)

        assert first["state"] == "success", log[-3000:]
        assert first["tasks"]["no_drift"] == "success"
        assert not database.exists()  # the second run's retriever took it away
        assert away["state"] == "failed"
        assert away["tasks"]["replay[0]"] == "success"
        assert away["tasks"]["join_batches"] == "success"  # joined, compared when flushed
        assert away["tasks"]["compare_and_save"] == "failed"
        assert away["tasks"]["check_drift"] == "upstream_failed"
        (path,) = sorted((home / "spool").glob("replay-*.json"))
        assert f"the replay was spooled to {path}" in log  # the task's error, as the CLI's note
        assert "db flush" in log
        text = path.read_text(encoding="utf-8")
        assert PASSWORD not in log and PASSWORD not in text
        spooled = json.loads(text)
        assert spooled["kind"] == "replay" and spooled["compare_with"] == "previous"
        assert len(spooled["rankings"]) == 12 and all(ids for _, ids, _ in spooled["rankings"])

        database.give_back()
        monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(home))
        monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
        saved = invoke(config, "db", "flush", "--db", database.url)
        assert saved.exit_code == 0, saved.output
        assert "saved 1 spooled replay(s)" in saved.stdout and not path.exists()
        with open_store(database.url) as store:
            newest, oldest = store.replays.history("top", RETRIEVER)
            total, page = store.replays.changed_page(newest.id)
            found = store.replays.latest_sample("top")
        assert newest.run_key == spooled["run_key"] != oldest.run_key
        assert newest.compared_id == oldest.id and oldest.state == "first"
        assert newest.state == "no_drift" and newest.mean_rbo == pytest.approx(1.0)
        assert total == 12 and all(q.before == q.ids for q in page)
        # one sample: the one drawn again from the log is the one the DAG had stored
        assert found is not None and newest.sample_id == oldest.sample_id == found[0]
        assert [q[1] for q in spooled["queries"]] == [q.text for q in found[1].queries]
        again = invoke(config, "db", "flush", "--db", database.url)
        assert again.exit_code == 0 and "no spooled runs" in again.stdout
    finally:
        database.drop()

"""The labelling DAG (a ``labelling:`` entry): its task graph, and two real ``dag.test()`` runs on
SQLite with a real OpenAI-compatible judge on 127.0.0.1 (tests/servers/judge_server.py).

The judge agrees with people: its grades are stored (rater ``judge:sim``), its calibration
passes and is stored, a person approves (answered from outside, as through the REST API:
hitl_responder.py), the set file gets version 2 with the judge's new target, and the stored run
is re-judged under it. The judge disagrees: the calibration fails, the calibration alert goes
to Slack (a real HTTP server on 127.0.0.1) naming κ and min_kappa, and nothing is promoted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES, HERE, run_plan
from labelling_world import DAG_ID, KEY, assert_promoted, judge, world
from slack_server import RecordingServer

from retrieval_eval.airflow.factory import build_dags
from retrieval_eval.config.models import load_config
from retrieval_eval.store import open_store

pytestmark = pytest.mark.airflow


def test_the_labelling_dag_is_one_per_entry_with_its_task_graph(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
                "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
                "judges": {"sim": {"type": "openai", "model": "m", "base_url": "http://x/v1"}},
                "labelling": [
                    {"set": "handbook.demo", "judge": "sim", "retrievers": ["bm25"]},
                    {"set": "handbook.demo", "judge": "sim2", "retrievers": ["bm25"]},
                ],
                "airflow": {"queue": "retrieval"},
            }
        )
    )
    dags = build_dags(load_config(config))
    assert sorted(dags) == [DAG_ID, "retrieval_eval_labelling__handbook_demo__sim2"]
    dag = dags[DAG_ID]
    down = {t.task_id: sorted(t.downstream_task_ids) for t in dag.tasks}
    assert down["plan_pool"] == ["pool"] and down["pool_rows"] == ["judge_job"]
    assert "plan_judge" in down["judge_job"] and down["plan_judge"] == ["judge"]
    assert down["store_judgments"] == ["calibrate"]
    assert down["check_calibration"] == ["alert_calibration", "approve_labels"]
    assert down["approve_labels"] == ["plan_promotion"]
    assert down["check_promotion"] == ["promote"] and down["promote"] == ["rejudge"]
    assert dag.task_dict["judge"].queue == "retrieval"  # mapped on the retrieval queue
    assert dag.schedule is not None and "labelling" in dag.tags
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    assert isinstance(dag.task_dict["approve_labels"], ApprovalOperator)
    example = build_dags(load_config(EXAMPLES / "labelling.yaml"))  # the shipped example
    assert list(example) == ["retrieval_eval_labelling__handbook_demo__umbrela"]
    twice = yaml.safe_load(config.read_text())
    twice["labelling"][1]["judge"] = "sim"  # two entries, one (set, judge): one DAG id
    config.write_text(yaml.safe_dump(twice))
    with pytest.raises(ValueError, match=rf"two labelling entries map to DAG id '{DAG_ID}'; give"):
        build_dags(load_config(config))


def test_a_calibrated_judge_is_approved_promoted_and_runs_rejudged_else_it_alerts(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    good = world(tmp_path / "good", connection=True)
    bad = world(tmp_path / "bad", slack=True)
    good_server, _ = judge(good, agree=True)
    bad_server, _ = judge(bad, agree=False)
    before = bad["set_file"].read_bytes()
    responder = subprocess.Popen(
        [sys.executable, str(HERE / "hitl_responder.py"), DAG_ID, "Approve", "600"],
        env=airflow_env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        with RecordingServer() as slack:
            connection = {
                "conn_type": "slackwebhook",
                "password": "T0/B0/secret-labelling",
                "host": f"http://127.0.0.1:{slack.port}",
            }
            outcomes, log = run_plan(
                airflow_env,
                [
                    {
                        "dag_id": DAG_ID,
                        "env": {
                            "RETRIEVAL_EVAL_CONFIG": str(good["config"]),
                            "SIM_JUDGE_KEY": KEY,
                            "AIRFLOW_CONN_SLACK_LAB": json.dumps(connection),
                            "AIRFLOW_CONN_LAB_STORE": json.dumps(
                                {
                                    "conn_type": "retrieval_eval_store",
                                    "extra": {"url": good["store"]},
                                }
                            ),
                        },
                    },
                    {"dag_id": DAG_ID, "env": {"RETRIEVAL_EVAL_CONFIG": str(bad["config"])}},
                ],
                tmp_path,
            )
            posted = list(slack.requests)
    finally:
        responder.kill()
        answered, _ = responder.communicate()
        for server in (good_server, bad_server):
            server.shutdown()
            server.server_close()
    passed, failed = outcomes
    tasks = passed["tasks"]
    assert passed["state"] == "success", (tasks, log[-3000:])
    assert "approve_labels: Approve" in answered
    assert tasks["approve_labels"] == "success" and tasks["alert_calibration"] == "skipped"
    assert tasks["promote"] == "success" and tasks["rejudge"] == "success"
    assert sum(1 for t in tasks if t.startswith("judge[")) == 2  # mapped batches
    runs = assert_promoted(good, log)  # cost and progress in the task logs too
    rejudged = [r for r in runs if r.result.rejudged is not None]
    assert [r.result.rejudged.from_run_id for r in rejudged] == [good["run_id"]]
    assert rejudged[0].result.set_version == 2

    assert failed["state"] == "success", failed["tasks"]
    assert failed["tasks"]["alert_calibration"] == "success"
    for skipped in ("approve_labels", "plan_promotion", "promote", "rejudge"):
        assert failed["tasks"][skipped] == "skipped"
    assert bad["set_file"].read_bytes() == before  # nothing promoted
    (alert,) = posted
    text = alert["body"]["text"]
    assert "Model judge failed calibration: handbook.demo × judge:sim" in text
    assert "Cohen's κ" in text and "min_kappa 0.60: failed" in text and "[" in text
    assert KEY not in json.dumps(alert) and "secret-labelling" not in text
    with open_store(bad["store"]) as store:
        (calibration,) = store.judges.calibrations("handbook.demo")
        assert not calibration.passed

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
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import EXAMPLES, HERE, run_plan
from servers.judge_server import JudgeBehaviour, start
from slack_server import RecordingServer

from retrieval_eval.airflow.factory import build_dags
from retrieval_eval.config.models import load_config
from retrieval_eval.labels.pooling import excerpt
from retrieval_eval.store import open_store
from retrieval_eval.workflows.base import run_in_process
from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob, opened_retriever

pytestmark = pytest.mark.airflow
DAG_ID = "retrieval_eval_labelling__handbook_demo__sim"
KEY = "sk-labelling-test-5d1e"
QUESTIONS = 8


def _world(folder: Path, slack: bool = False, connection: bool = False) -> dict[str, Any]:
    """A small set (the demo's first questions, each with one document people graded 0), a
    store holding one run of it, and a config with the labelling entry (the judge's URL is
    filled in by the caller). With ``connection`` the DAG's store is the Airflow connection
    ``lab_store``'s and the config's ``store:`` a decoy no task may touch."""
    folder.mkdir()
    demo = yaml.safe_load((EXAMPLES / "golden" / "handbook.yaml").read_text())
    questions = demo["questions"][:QUESTIONS]
    targets = {doc for q in questions for doc in q["expected_document_ids"]}
    others = sorted(
        str(p.relative_to(EXAMPLES / "corpus"))
        for p in (EXAMPLES / "corpus").rglob("*.md")
        if str(p.relative_to(EXAMPLES / "corpus")) not in targets
    )
    not_relevant = others[:QUESTIONS]
    for question, doc in zip(questions, not_relevant, strict=True):
        question["grades"] = {doc: 0}
    set_file = folder / "set.yaml"
    set_file.write_text(yaml.safe_dump({**demo, "questions": questions}), encoding="utf-8")
    store = f"sqlite:///{folder / 'store.sqlite'}"
    config: dict[str, Any] = {
        "store": f"sqlite:///{folder / 'decoy.sqlite'}" if connection else store,
        "sets": [str(set_file)],
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
        "judges": {
            "sim": {
                "type": "openai",
                "model": "sim-1",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_from_env": "SIM_JUDGE_KEY",
                "max_concurrency": 4,
                "input_price_per_1k": 0.5,
                "output_price_per_1k": 2.0,
                "timeout_s": 5,
                "deadline_s": 60,
                "backoff_s": 0.05,
                "min_kappa": 0.6,
            }
        },
        "labelling": [
            {
                "set": "handbook.demo",
                "judge": "sim",
                "retrievers": ["bm25"],
                "depth": 3,
                "max_batches": 2,
                "alerts": [{"type": "slack", "connection_id": "slack_lab"}] if slack else [],
            }
        ],
        "airflow": {
            "retries": 0,
            "ui_base_url": "http://airflow.example/retrieval-eval",
            **({"store_connection_id": "lab_store"} if connection else {}),
        },
    }
    path = folder / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    job = LabelledRunJob(config_path=str(path), set="handbook.demo", retriever="bm25")
    recorded = run_in_process(LabelledRun(job, store_url=lambda: store))
    ranked = {q.id: list(q.retrieved[:3]) for q in recorded.result.questions}
    new = next(
        doc for q in questions for doc in ranked[q["id"]] if doc not in {*targets, *not_relevant}
    )
    with opened_retriever(load_config(path), "bm25") as retriever:
        texts = retriever.document_texts([*targets, *not_relevant, new, *others])
    return {
        "config": path,
        "store": store,
        "set_file": set_file,
        "targets": targets,
        "new": new,
        "texts": {doc: excerpt(text) for doc, text in texts.items()},
        "run_id": recorded.run_id,
    }


def _judge(world: dict[str, Any], agree: bool) -> tuple[Any, str]:
    """A judge server grading by passage: agreeing with people (targets 1, the new document 1,
    the rest 0) or against them (targets 0, the rest 3)."""
    grades: defaultdict[str, int] = defaultdict(lambda: 0 if agree else 3)
    for doc in world["targets"]:
        grades[world["texts"][doc]] = 1 if agree else 0
    if agree:
        grades[world["texts"][world["new"]]] = 1
    server, url = start(JudgeBehaviour(key=KEY, grades=grades))
    config = yaml.safe_load(world["config"].read_text())
    config["judges"]["sim"]["base_url"] = url
    world["config"].write_text(yaml.safe_dump(config), encoding="utf-8")
    return server, url


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


def test_a_calibrated_judge_is_approved_promoted_and_runs_rejudged_else_it_alerts(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    good = _world(tmp_path / "good", connection=True)
    bad = _world(tmp_path / "bad", slack=True)
    good_server, _ = _judge(good, agree=True)
    bad_server, _ = _judge(bad, agree=False)
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
    # cost and progress in the task logs
    assert "graded; cost $" in log and "judgment(s) stored" in log
    assert "Cohen's κ 1.000" in log and "min_kappa 0.60: passed" in log
    with open_store(good["store"]) as store:
        rows = store.judgments.stored("handbook.demo")
        machine = [s for s in rows if s.judgment.rater == "judge:sim"]
        assert machine and all(s.judge_identity for s in machine)
        (calibration,) = store.judges.calibrations("handbook.demo")
        assert calibration.passed and calibration.kappa == pytest.approx(1.0)
        runs = store.runs.runs_of_set("handbook.demo")
    assert not (tmp_path / "good" / "decoy.sqlite").exists()  # the connection's store only
    promoted = yaml.safe_load(good["set_file"].read_text())
    assert promoted["version"] == 2
    (entry,) = promoted["changelog"]
    assert entry["raters"] == ["judge:sim"] and entry["added"]
    assert any(good["new"] in q["expected_document_ids"] for q in promoted["questions"])
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

"""A real CeleryExecutor deployment with two workers (Redis broker, PostgreSQL result backend):
the mapped ``retrieve`` batches run on both; beside them, on the same deployment, the
labelling DAG (judge batches on the workers, its approval answered through REST API v2, the
store on PostgreSQL).

Selected with ``pytest -m deployment``, as ``test_deployment.py`` (LocalExecutor); a module of
its own so that ``--dist loadscope`` runs the two deployments on the two workers at once.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from deployment import deployment, pg_schema
from labelling_world import DAG_ID, KEY, assert_promoted, judge, world

from retrieval_eval.airflow.labelling import APPROVE

pytestmark = [pytest.mark.airflow, pytest.mark.deployment]


@pytest.fixture
def redis_broker() -> str:
    """Redis on 127.0.0.1:6379 (the Celery broker); a skip with a reason where there is none,
    a failure when RETRIEVAL_EVAL_REQUIRE_REDIS is set (CI sets it)."""
    import socket

    from helpers import required

    try:
        with socket.create_connection(("127.0.0.1", 6379), timeout=3) as sock:
            sock.sendall(b"PING\r\n")
            answered = sock.recv(16).startswith(b"+PONG")
    except OSError as exc:
        answered, reason = False, f"{type(exc).__name__}: {exc}"
    else:
        reason = "no PONG"
    if not answered:
        message = f"Redis unreachable at 127.0.0.1:6379 ({reason})"
        if required("RETRIEVAL_EVAL_REQUIRE_REDIS"):
            pytest.fail(message + " — RETRIEVAL_EVAL_REQUIRE_REDIS is set, so this is a failure")
        pytest.skip(message)
    return "redis://127.0.0.1:6379"


@pytest.fixture
def store_schema(pg_url: str) -> Iterator[str]:
    """A schema of its own in PostgreSQL's ``test`` database for the store."""
    with pg_schema(pg_url, "re_celery") as schema:
        yield schema


def test_celery_executor_runs_the_evaluation_and_the_labelling_on_its_workers(
    tmp_path: Path, pg_url: str, redis_broker: str, store_schema: str
) -> None:
    """The evaluation's mapped ``retrieve`` batches spread over both workers; the labelling DAG
    (issue 37 item 6), triggered with it on the same deployment: its judge batches on the
    workers against a real judge server, its approval answered through REST API v2, the
    judge's grades promoted into the set file and the stored runs (the in-process one and the
    evaluation's) re-judged."""
    scheme, rest = pg_url.split("://", 1)
    store_url = f"{scheme}://{rest}?options=-csearch_path%3D{store_schema}"
    lab = world(tmp_path / "lab", connection=True, store=store_url)
    server, judge_url = judge(lab, agree=True)
    config = yaml.safe_load(lab["config"].read_text())
    # the judge's key (and URL) from an Airflow connection, as a deployment keeps secrets
    del config["judges"]["sim"]["api_key_from_env"]
    config["judges"]["sim"].update(
        {"connection_id": "sim_judge", "base_url": "http://127.0.0.1:9/v1"}
    )
    config["evaluations"] = [
        {
            "set": "handbook.demo",  # the labelling's set: its run is re-judged too
            "retriever": "bm25",
            "schedule": None,
            # queued together (parallelism 4), and a worker reserves at most two
            # (concurrency 2, prefetch multiplier 1): both workers get some
            "max_batches": 4,
            "min_batch_questions": 1,
        }
    ]
    # manual runs only: unpaused, a scheduled one would start at once and hold the approval
    config["labelling"][0]["schedule"] = None
    config["airflow"].update({"retries": 2, "retry_delay_s": 2, "max_retry_delay_s": 10})
    lab["config"].write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {
        "RETRIEVAL_EVAL_CONFIG": str(lab["config"]),
        "RETRIEVAL_EVAL_HOME": str(tmp_path / "re"),
        "AIRFLOW_CONN_SIM_JUDGE": json.dumps(
            {"conn_type": "http", "host": judge_url, "password": KEY}
        ),
        "AIRFLOW_CONN_LAB_STORE": json.dumps(
            {"conn_type": "retrieval_eval_store", "extra": {"url": store_url}}
        ),
    }
    dag_id = "retrieval_eval__handbook_demo__bm25"
    workers = {"worker-a", "worker-b"}
    try:
        with deployment(
            tmp_path / "airflow",
            pg_url,
            env=env,
            executor="CeleryExecutor",
            workers=tuple(sorted(workers)),
            triggerer=True,  # the labelling's approval defers
        ) as af:
            af.wait_for_dag(dag_id)
            af.wait_for_dag(DAG_ID)
            # both at once: the labelling's first tasks share the workers with the batches
            run = af.trigger(dag_id, "celery")
            labelling = af.trigger(DAG_ID, "labelling")
            assert af.wait(dag_id, run) == "success"
            tis = af.task_instances(dag_id, run)
            batches = {k: t for k, t in tis.items() if k.startswith("retrieve[")}
            assert len(batches) == 4
            assert all(t["state"] == "success" for t in batches.values())
            assert {t["hostname"] for t in batches.values()} == workers

            # answered once the evaluation's run is stored: the re-judging finds it
            af.wait_for_task(DAG_ID, labelling, APPROVE, "awaiting_input")
            request = af.hitl(DAG_ID, labelling, APPROVE)
            assert request["subject"] == "Promote judge:sim's grades into handbook.demo?"
            assert "Cohen's κ 1.000" in request["body"] and "passed" in request["body"]
            answer = af.respond(DAG_ID, labelling, APPROVE, "Approve")
            assert answer["chosen_options"] == ["Approve"]
            assert af.wait(DAG_ID, labelling) == "success"
            tis = af.task_instances(DAG_ID, labelling)
            logs = af.logs()
    finally:
        server.shutdown()
        server.server_close()
    judged = {k: t for k, t in tis.items() if k.startswith("judge[")}
    assert len(judged) == 2  # mapped batches, run by the Celery workers
    assert all(t["state"] == "success" and t["hostname"] in workers for t in judged.values())
    for done in (APPROVE, "promote", "rejudge"):
        assert tis[done]["state"] == "success"
    assert tis["alert_calibration"]["state"] == "skipped"
    # cost and progress in the task logs (the workers' log folder), the judge's key in none
    runs = assert_promoted(lab, logs)
    assert KEY not in logs
    evaluated = [r.id for r in runs if r.result.rejudged is None and r.id != lab["run_id"]]
    rejudged = [r for r in runs if r.result.rejudged is not None]
    assert sorted(r.result.rejudged.from_run_id for r in rejudged) == sorted(
        [lab["run_id"], *evaluated]
    )
    assert len(evaluated) == 1 and all(r.result.set_version == 2 for r in rejudged)

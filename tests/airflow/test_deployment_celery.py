"""A real CeleryExecutor deployment with two workers (Redis broker, PostgreSQL result backend):
the mapped ``retrieve`` batches run on both.

Selected with ``pytest -m deployment``, as ``test_deployment.py`` (LocalExecutor); a module of
its own so that ``--dist loadscope`` runs the two deployments on the two workers at once.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES
from deployment import deployment

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


def test_celery_executor_spreads_batches_over_two_workers(
    tmp_path: Path, pg_url: str, redis_broker: str
) -> None:
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": f"sqlite:///{tmp_path / 'results.sqlite'}",
                "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
                "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
                "evaluations": [
                    {
                        "set": "handbook.demo",
                        "retriever": "bm25",
                        "schedule": None,
                        # queued together (parallelism 4), and a worker reserves at most two
                        # (concurrency 2, prefetch multiplier 1): both workers get some
                        "max_batches": 4,
                        "min_batch_questions": 1,
                    }
                ],
                "airflow": {"retries": 2, "retry_delay_s": 2, "max_retry_delay_s": 10},
            }
        )
    )
    env = {"RETRIEVAL_EVAL_CONFIG": str(config), "RETRIEVAL_EVAL_HOME": str(tmp_path / "re")}
    dag_id = "retrieval_eval__handbook_demo__bm25"
    with deployment(
        tmp_path / "airflow",
        pg_url,
        env=env,
        executor="CeleryExecutor",
        workers=("worker-a", "worker-b"),
        triggerer=False,  # nothing in this DAG defers
    ) as af:
        af.wait_for_dag(dag_id)
        run = af.trigger(dag_id, "celery")
        assert af.wait(dag_id, run) == "success"
        tis = af.task_instances(dag_id, run)
        batches = {k: t for k, t in tis.items() if k.startswith("retrieve[")}
        assert len(batches) == 4
        assert all(t["state"] == "success" for t in batches.values())
        assert {t["hostname"] for t in batches.values()} == {"worker-a", "worker-b"}

"""Benchmark 7: real Airflow deployments (the tests' harness, ``tests/airflow/deployment.py``).

- **LocalExecutor overhead**: a DAG run of the demo set (46 questions, 4 batches) and of SciFact
  (300, 8 batches; skipped without ../shared/data) against the sum of (a) a do-nothing DAG with
  the same task graph (:mod:`benchmarks.noop_dag`) and the same number of mapped tasks in
  the same deployment and (b) the CLI on the same set (``retrieval-eval run --no-save``, a new process). Run time is the DAG run's
  ``end_date - start_date``; two alternating rounds, best of each. Target ≤ 1.3: the package adds
  little beyond Airflow's own per-task cost and the evaluation itself.
- **Celery scale-out**: 400 questions against a loopback HTTP service answering after 50 ms,
  ``max_concurrency`` 1, 8 batches, on CeleryExecutor with one worker (``--concurrency 1``),
  then with a second one: the wall time of the ``retrieve`` stage (first batch start to last
  batch end). The same for a replay DAG of a 400-query sample against a 20 ms service (its
  ``replay`` stage), in the same deployment. Target ≥ 1.7× faster with two, for each.

The scheduler keeps Airflow's 1 s idle sleep (the tests' harness loops at 0.2 s) and the task
supervisor checks in every second, as docs/how-to/celery.md advises for workers. Needs PostgreSQL
(metadata) and Redis (broker) on 127.0.0.1, as the tests do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import yaml

from benchmarks.common import ROOT, SHARED_DATA, Row, seconds
from benchmarks.noop_dag import noop_dag_file

sys.path.insert(0, os.path.join(ROOT, "tests", "airflow"))
from deployment import Deployment, deployment

PG = os.environ.get("RETRIEVAL_EVAL_TEST_PG", "postgresql://postgres@127.0.0.1:5432/test")
EXAMPLES = Path(ROOT) / "examples"
IDLE_SLEEP = 1.0  # the scheduler's, as Airflow ships it (the tests' harness loops faster)
BIN = Path(sys.executable).parent


def _duration(af: Deployment, dag_id: str, run_id: str) -> float:
    run = af.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")
    return (_time(run["end_date"]) - _time(run["start_date"])).total_seconds()


def _time(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def _run(af: Deployment, dag_id: str, label: str) -> float:
    run_id = af.trigger(dag_id, f"{label}-{time.monotonic_ns()}")
    state = af.wait(dag_id, run_id)
    if state != "success":
        raise RuntimeError(f"{dag_id} run {run_id} ended {state}; see {af.home}")
    return _duration(af, dag_id, run_id)


def _cli(set_name: str, config: Path, env: dict[str, str]) -> float:
    best = float("inf")
    for _ in range(2):
        started = time.perf_counter()
        subprocess.run(
            [
                str(BIN / "retrieval-eval"),
                "run",
                set_name,
                "bm25",
                "--config",
                str(config),
                "--no-save",
            ],
            env=env,
            check=True,
            capture_output=True,
            timeout=600,
        )
        best = min(best, time.perf_counter() - started)
    return best


def _local(folder: Path) -> list[Row]:
    sets: list[tuple[str, Path, Path, int]] = [
        ("handbook.demo", EXAMPLES / "golden" / "handbook.yaml", EXAMPLES / "corpus", 4)
    ]
    scifact = Path(SHARED_DATA) / "scifact"
    if (scifact / "queries.jsonl").is_file():
        from retrieval_eval.golden.importers import import_beir
        from retrieval_eval.golden.loaders import dump_golden_set

        path = dump_golden_set(import_beir(scifact, identifier="scifact"), folder / "scifact.yaml")
        sets.append(("scifact", path, scifact / "corpus.jsonl", 8))
    config = folder / "retrieval_eval.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "store": f"sqlite:///{folder / 'results.sqlite'}",
                "sets": [str(s[1]) for s in sets],
                # one retriever name per set: the corpus differs
                "retrievers": {"bm25": {"type": "lexical", "corpus": "CORPUS"}},
                "evaluations": [
                    {"set": s[0], "retriever": "bm25", "schedule": None, "max_batches": s[3]}
                    for s in sets
                ],
            }
        )
    )
    dags = folder / "dags"
    dags.mkdir()
    (dags / "noop_dags.py").write_text(
        noop_dag_file([("noop_4", 4), ("noop_8", 8)]), encoding="utf-8"
    )
    rows: list[Row] = []
    for name, _golden, corpus, batches in sets:
        text = config.read_text().replace("CORPUS", str(corpus))
        own = folder / f"config_{name}.yaml"
        own.write_text(text)
        data = yaml.safe_load(text)
        data["evaluations"] = [e for e in data["evaluations"] if e["set"] == name]
        own.write_text(yaml.safe_dump(data))
        (dags / "retrieval_eval_dags.py").write_text(
            (Path(ROOT) / "dags" / "retrieval_eval_dags.py").read_text()
        )
        env = {
            "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
            "RETRIEVAL_EVAL_CONFIG": str(own),
            "RETRIEVAL_EVAL_HOME": str(folder / "re_home"),
        }
        dag_id = f"retrieval_eval__{name.replace('.', '_')}__bm25"
        with deployment(folder / f"airflow_{name}", PG, env=env, idle_sleep=IDLE_SLEEP) as af:
            af.wait_for_dag(dag_id)
            af.wait_for_dag(f"noop_{batches}")
            ours = noop = float("inf")
            for round_ in range(2):
                noop = min(noop, _run(af, f"noop_{batches}", f"noop{round_}"))
                ours = min(ours, _run(af, dag_id, f"ours{round_}"))
            cli = _cli(name, own, {**af.env})
        reference = noop + cli
        rows.append(
            Row(
                f"7. LocalExecutor DAG run, {name} ({batches} batches)",
                seconds(ours),
                seconds(reference),
                ours / reference,
                "≤ 1.30",
                ours / reference <= 1.3,
                f"reference: do-nothing DAG, same graph ({seconds(noop)}) + CLI ({seconds(cli)})",
            )
        )
    return rows


def _loopback(latency_s: float) -> tuple[subprocess.Popen[str], int]:
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.loopback_server", str(latency_s)],
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    return server, int(server.stdout.readline())  # type: ignore[union-attr]


def _jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _celery(folder: Path) -> list[Row]:
    (server, port), (fast, fast_port) = _loopback(0.05), _loopback(0.02)
    try:
        golden = _jsonl(
            folder / "http.jsonl",
            [
                {
                    "id": f"q{i}",
                    "question": f"q {i}",
                    "form": "match",
                    "expected_document_ids": [f"d{i % 12}"],
                }
                for i in range(400)
            ],
        )
        log = _jsonl(folder / "queries.jsonl", [{"query": f"query {i}"} for i in range(400)])
        config = folder / "celery.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "store": f"sqlite:///{folder / 'celery.sqlite'}",
                    "sets": [{"path": str(golden), "identifier": "bench.celery"}],
                    "retrievers": {
                        name: {
                            "type": "http",
                            "url": f"http://127.0.0.1:{at}/search",
                            "ids": "hits.hits[*]._id",
                            "max_concurrency": 1,
                        }
                        for name, at in (("loopback", port), ("loopback20", fast_port))
                    },
                    "evaluations": [
                        {
                            "set": "bench.celery",
                            "retriever": "loopback",
                            "schedule": None,
                            "max_batches": 8,
                        }
                    ],
                    "samples": {
                        "bench_traffic": {
                            "source": {"path": str(log)},
                            "method": "all",
                            "privacy": "plain",
                        }
                    },
                    "replays": [
                        {
                            "sample": "bench_traffic",
                            "retriever": "loopback20",
                            "schedule": None,
                            "max_batches": 8,
                            "replay": {"max_concurrency": 1},
                        }
                    ],
                }
            )
        )
        env = {"RETRIEVAL_EVAL_CONFIG": str(config), "RETRIEVAL_EVAL_HOME": str(folder / "re")}
        dag_id = "retrieval_eval__bench_celery__loopback"
        replay_id = "retrieval_eval_replay__bench_traffic__loopback20"
        stages: dict[tuple[str, int], float] = {}
        with deployment(
            folder / "airflow_celery",
            PG,
            env=env,
            executor="CeleryExecutor",
            idle_sleep=IDLE_SLEEP,
        ) as af:
            af.add_worker("worker-a", concurrency=1)
            af.wait_for_dag(dag_id)
            af.wait_for_dag(replay_id)
            stages["retrieve", 1] = _mapped_stage(af, dag_id, "one", "retrieve")
            stages["replay", 1] = _mapped_stage(af, replay_id, "one", "replay")
            af.add_worker("worker-b", concurrency=1)
            time.sleep(10)  # let the second worker join the queue
            stages["retrieve", 2] = _mapped_stage(af, dag_id, "two", "retrieve")
            stages["replay", 2] = _mapped_stage(af, replay_id, "two", "replay")
    finally:
        for process in (server, fast):
            process.terminate()
            process.wait()
    rows = []
    for stage, what in (
        ("retrieve", "400 q × 50 ms loopback HTTP"),
        ("replay", "replay of a 400-query sample × 20 ms loopback HTTP"),
    ):
        ratio = stages[stage, 1] / stages[stage, 2]
        rows.append(
            Row(
                f"7. Celery {stage} stage, 1 worker vs 2",
                seconds(stages[stage, 2]),
                seconds(stages[stage, 1]),
                ratio,
                "≥ 1.70",
                ratio >= 1.7,
                f"{what}, max_concurrency 1, 8 batches, worker --concurrency 1; "
                "ratio = 1 worker / 2 workers",
            )
        )
    return rows


def _mapped_stage(af: Deployment, dag_id: str, label: str, task: str) -> float:
    """Wall time of the mapped ``task``'s batches: first start to last end."""
    run_id = af.trigger(dag_id, f"{label}-{time.monotonic_ns()}")
    if af.wait(dag_id, run_id) != "success":
        raise RuntimeError(f"celery run {run_id} failed; see {af.home}")
    batches = [t for k, t in af.task_instances(dag_id, run_id).items() if k.startswith(f"{task}[")]
    start = min(_time(t["start_date"]) for t in batches)
    end = max(_time(t["end_date"]) for t in batches)
    return (end - start).total_seconds()


def run_local() -> list[Any]:
    """Only the LocalExecutor rows (``python -m benchmarks dagrun``): the demo DAG run's ratio."""
    with tempfile.TemporaryDirectory() as folder:
        return _local(Path(folder))


def run() -> list[Any]:
    with tempfile.TemporaryDirectory() as folder:
        local = Path(folder) / "local"
        local.mkdir()
        celery = Path(folder) / "celery"
        celery.mkdir()
        return _local(local) + _celery(celery)

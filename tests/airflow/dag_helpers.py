"""Airflow test plumbing: configs for one evaluation and DAG runs in subprocesses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
EXAMPLES = ROOT / "examples"
BIN = Path(sys.executable).parent


def write_config(
    path: Path,
    *,
    store: str,
    retriever: str,
    alerts: list[dict[str, Any]] | None = None,
    golden: Path | None = None,
    airflow: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> Path:
    """A config for one evaluation of the demo set (absolute paths, so it lives anywhere)."""
    data: dict[str, Any] = {
        "store": store,
        "sets": [str(golden or EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {
            "handbook_bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")},
        },
        "evaluations": [
            {
                "set": "handbook.demo",
                "retriever": retriever,
                "alerts": alerts or [],
                "max_batches": 2,
                "min_batch_questions": 1,  # the tests fan the demo set out over 2 batches
            }
        ],
        "airflow": {
            "retries": 0,
            "ui_base_url": "http://airflow.example/retrieval-eval",
            **(airflow or {}),
        },
        **(extra or {}),
    }
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def airflow_cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """``airflow ARGS`` in a subprocess under ``env`` (its Airflow home)."""
    return subprocess.run(
        [str(BIN / "airflow"), *args], env=env, capture_output=True, text=True, timeout=120
    )


def run_dag(
    env: dict[str, str],
    dag_id: str,
    *,
    conf: dict[str, Any] | None = None,
    extra_env: dict[str, str] | None = None,
) -> dict[str, Any]:
    """One ``dag.test()`` run; return its state and task states (and the log)."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="dag_run_") as folder:
        step = {"dag_id": dag_id, "conf": conf or {}}
        (outcome,), log = run_plan({**env, **(extra_env or {})}, [step], Path(folder))
    outcome["log"] = log
    return outcome


def run_plan(
    env: dict[str, str], plan: list[dict[str, Any]], folder: Path
) -> tuple[list[dict[str, Any]], str]:
    """Several ``dag.test()`` runs, in this test worker's long-lived plan process.

    Each step: ``{"dag_id", "conf", "env"}`` (``testrun --plan``'s format); ``env`` is the whole
    environment of the plan. Returns the outcomes and the plan's log (Airflow's output). A plan
    under another ``AIRFLOW_HOME`` or ``PYTHONPATH`` gets a process of its own.
    """
    log = folder / "plan.log"
    runner = _runner(env)
    answer = runner.ask({"env": env, "plan": plan, "log": str(log)})
    text = log.read_text(encoding="utf-8", errors="replace") if log.exists() else ""
    assert "outcomes" in answer, f"no outcomes:\n{answer.get('error')}\nLOG:\n{text[-4000:]}"
    return answer["outcomes"], text


class PlanRunner:
    """``plan_server.py`` in a subprocess: plans in, outcomes out, one JSON line each."""

    def __init__(self, env: dict[str, str]) -> None:
        import tempfile

        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self.process = subprocess.Popen(
            [sys.executable, str(HERE / "plan_server.py")],
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            text=True,
        )

    def ask(self, request: dict[str, Any], timeout: float = 900) -> dict[str, Any]:
        import select

        assert self.process.stdin is not None and self.process.stdout is not None
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:  # it ended after its last plan: said below, with its stderr
            ready = []
        else:
            ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        line = self.process.stdout.readline() if ready else ""
        if not line:
            self.process.kill()
            self.stderr.seek(0)
            tail = self.stderr.read().decode(errors="replace")[-4000:]
            return {"error": f"the plan process ended or hung (timeout {timeout} s):\n{tail}"}
        return dict(json.loads(line))

    def alive(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        self.process.kill()  # between plans it holds nothing that needs a clean exit
        self.process.wait()
        self.stderr.close()


_RUNNERS: dict[tuple[str | None, str | None], PlanRunner] = {}


def _runner(env: dict[str, str]) -> PlanRunner:
    """The running plan process for ``env``'s Airflow home and import path (started if none)."""
    key = env.get("AIRFLOW_HOME"), env.get("PYTHONPATH")
    runner = _RUNNERS.get(key)
    if runner is None or not runner.alive():
        if runner is not None:
            runner.stop()
        runner = _RUNNERS[key] = PlanRunner(env)
    return runner


def stop_plan_runners() -> None:
    """End every plan process (the session's ``airflow_env`` fixture calls it at the end)."""
    while _RUNNERS:
        _RUNNERS.popitem()[1].stop()

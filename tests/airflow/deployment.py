"""A real Airflow deployment for tests: separate components, PostgreSQL metadata, the REST API.

``Deployment`` creates a fresh PostgreSQL database for Airflow's metadata, migrates it, and
starts ``airflow api-server``, ``scheduler``, ``dag-processor`` and ``triggerer`` as separate
processes on 127.0.0.1 (plus ``airflow celery worker`` processes for CeleryExecutor), the way a
production install runs them. Tests drive it as a user does: a token from ``/auth/token``, DAG
runs through REST API v2. Everything is stopped and the database dropped afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from dag_helpers import BIN, HERE, ROOT

FINISHED = {"success", "failed"}
ADMIN_PASSWORD = "admin-test-pw"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Deployment:
    """Airflow 3 as separate processes; ``executor`` is ``LocalExecutor`` or ``CeleryExecutor``."""

    def __init__(
        self,
        home: Path,
        pg_url: str,
        *,
        env: dict[str, str],
        executor: str = "LocalExecutor",
        workers: tuple[str, ...] = (),
        triggerer: bool = True,
        parallelism: int = 4,
        idle_sleep: float = 0.2,
    ) -> None:
        self.home = home
        self.pg_url = pg_url
        self.database = f"af_{uuid.uuid4().hex[:10]}"
        self.port = free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        self.executor = executor
        self.workers = workers
        self.triggerer = triggerer  # deferred tasks (the approval's HITL operator) need one
        self.redis_db = 1 + int(uuid.uuid4().hex[:4], 16) % 15
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        metadata = self._database_url()
        passwords = home / "passwords.json"
        home.mkdir(parents=True, exist_ok=True)
        passwords.write_text(json.dumps({"admin": ADMIN_PASSWORD}), encoding="utf-8")
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
            "AIRFLOW__CORE__DAGS_FOLDER": str(ROOT / "dags"),
            "AIRFLOW__CORE__PLUGINS_FOLDER": str(home / "plugins"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": executor,
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base}/execution/",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"postgresql+psycopg://{metadata}",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC": f"postgresql+psycopg_async://{metadata}",
            "AIRFLOW__API_AUTH__JWT_SECRET": "test-jwt-secret-" + uuid.uuid4().hex,
            "AIRFLOW__API__SECRET_KEY": "test-api-secret-" + uuid.uuid4().hex,
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": "admin:admin",
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(passwords),
            "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
            # Airflow 3.3's task supervisor notices its task process's exit only on its next
            # wake-up once the process has closed its sockets: up to min_heartbeat_interval
            # (5 s) more per task, which a worker slot sits through (see docs/how-to/celery.md)
            "AIRFLOW__WORKERS__MIN_HEARTBEAT_INTERVAL": "1",
            # the scheduler's sleep when a loop found nothing to do (Airflow's default is 1 s):
            # the tests' runs wait it out between every two tasks; the benchmark keeps 1 s
            "AIRFLOW__SCHEDULER__SCHEDULER_IDLE_SLEEP_TIME": str(idle_sleep),
            "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
            "AIRFLOW__CELERY__BROKER_URL": f"redis://127.0.0.1:6379/{self.redis_db}",
            "AIRFLOW__CELERY__RESULT_BACKEND": f"db+postgresql+psycopg://{metadata}",
            "AIRFLOW__CELERY__WORKER_PREFETCH_MULTIPLIER": "1",
            **env,
        }
        self._token: str | None = None

    def _database_url(self) -> str:
        """``user@host:port/<fresh database>`` from the admin URL (its user, host and port)."""
        rest = self.pg_url.split("://", 1)[1]
        return rest.rsplit("/", 1)[0] + "/" + self.database

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> Deployment:
        import psycopg

        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{self.database}"')
        self._run("airflow", "db", "migrate")
        self._spawn(
            "api-server", "airflow", "api-server", "--host", "127.0.0.1", "--port", str(self.port)
        )
        self._spawn("scheduler", "airflow", "scheduler")
        self._spawn("dag-processor", "airflow", "dag-processor")
        if self.triggerer:
            self._spawn("triggerer", "airflow", "triggerer")
        for name in self.workers:
            self.add_worker(name)
        self._wait_for_api()
        return self

    def add_worker(self, name: str, concurrency: int = 2) -> None:
        """Start ``airflow celery worker`` reporting ``name`` as its task instances' hostname
        (``hostnames.<name>`` must exist: two workers on one machine share its real name)."""
        self._spawn(
            name,
            "airflow",
            "celery",
            "worker",
            "--celery-hostname",
            f"{name}@%h",
            "--concurrency",
            str(concurrency),
            "--skip-serve-logs",
            env={"AIRFLOW__CORE__HOSTNAME_CALLABLE": f"hostnames.{name.replace('-', '_')}"},
        )

    def stop(self) -> None:
        for process in self.processes.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGTERM)
        # then killed: nothing of theirs is kept (the database is dropped), so no long grace
        deadline = time.monotonic() + 1
        for process in self.processes.values():
            try:
                process.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        import psycopg

        with psycopg.connect(self.pg_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
        if self.executor == "CeleryExecutor":
            with contextlib.suppress(Exception):
                import redis

                redis.Redis(host="127.0.0.1", port=6379, db=self.redis_db).flushdb()

    def _run(self, *command: str) -> None:
        done = subprocess.run(
            [str(BIN / command[0]), *command[1:]],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")

    def _spawn(self, name: str, *command: str, env: dict[str, str] | None = None) -> None:
        log = (self.home / f"{name}.out").open("wb")
        self.processes[name] = subprocess.Popen(
            [str(BIN / command[0]), *command[1:]],
            env={**self.env, **(env or {})},
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # one process group each: stop() ends their children too
        )

    def _wait_for_api(self, timeout: float = 180) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.base}/api/v2/monitor/health", timeout=5).status_code == 200:
                    return
            time.sleep(1)
        raise TimeoutError(f"the api-server did not answer within {timeout} s")

    def _check_alive(self) -> None:
        for name, process in self.processes.items():
            if process.poll() is not None:
                tail = (self.home / f"{name}.out").read_text(errors="replace")[-3000:]
                raise RuntimeError(f"airflow {name} exited {process.returncode}:\n{tail}")

    # -- REST API v2 -------------------------------------------------------------------------

    def token(self) -> str:
        if self._token is None:
            answer = httpx.post(
                f"{self.base}/auth/token",
                json={"username": "admin", "password": ADMIN_PASSWORD},
                timeout=30,
            )
            answer.raise_for_status()
            self._token = str(answer.json()["access_token"])
        return self._token

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        answer = httpx.request(
            method,
            f"{self.base}/api/v2{path}",
            headers={"Authorization": f"Bearer {self.token()}"},
            timeout=60,
            **kwargs,
        )
        if answer.status_code >= 400:
            raise RuntimeError(f"{method} {path}: HTTP {answer.status_code} {answer.text[:500]}")
        return answer.json() if answer.content else None

    def wait_for_dag(self, dag_id: str, timeout: float = 180) -> None:
        """Until the dag-processor has parsed and serialized the DAG; then unpause it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            with contextlib.suppress(RuntimeError):
                self.api("GET", f"/dags/{dag_id}")
                self.api("PATCH", f"/dags/{dag_id}", json={"is_paused": False})
                return
            time.sleep(0.5)
        errors = self.api("GET", "/importErrors")
        raise TimeoutError(f"DAG {dag_id} not parsed within {timeout} s; import errors: {errors}")

    def trigger(self, dag_id: str, run_id: str, conf: dict[str, Any] | None = None) -> str:
        self.api(
            "POST",
            f"/dags/{dag_id}/dagRuns",
            json={"dag_run_id": run_id, "logical_date": None, "conf": conf or {}},
        )
        return run_id

    def wait(self, dag_id: str, run_id: str, timeout: float = 600) -> str:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            state = self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"]
            if state in FINISHED:
                return str(state)
            time.sleep(0.5)
        raise TimeoutError(f"run {run_id} of {dag_id} did not finish within {timeout} s")

    def post_asset_event(self, uri: str, extra: dict[str, Any]) -> dict[str, Any]:
        """What an index-build job outside Airflow does: an asset event with ``extra``, posted
        through REST API v2 (the asset is the one a DAG's schedule registered)."""
        found = self.api("GET", "/assets", params={"uri_pattern": uri})["assets"]
        (asset,) = [a for a in found if a["uri"].rstrip("/") == uri.rstrip("/")]
        return dict(
            self.api("POST", "/assets/events", json={"asset_id": asset["id"], "extra": extra})
        )

    def wait_for_triggered(self, dag_id: str, known: set[str], timeout: float = 120) -> str:
        """The id of the asset-triggered run of ``dag_id`` not among ``known``, once the
        scheduler has created it."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            runs = self.api(
                "GET", f"/dags/{dag_id}/dagRuns", params={"run_type": "asset_triggered"}
            )["dag_runs"]
            new = [r["dag_run_id"] for r in runs if r["dag_run_id"] not in known]
            if new:
                return str(new[0])
            time.sleep(0.5)
        raise TimeoutError(f"no asset-triggered run of {dag_id} within {timeout} s")

    def task_instances(self, dag_id: str, run_id: str) -> dict[str, dict[str, Any]]:
        """By ``task_id`` or ``task_id[map_index]``: state, try_number, hostname."""
        found = self.api(
            "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances", params={"limit": 100}
        )["task_instances"]
        return {
            (t["task_id"] if t["map_index"] < 0 else f"{t['task_id']}[{t['map_index']}]"): t
            for t in found
        }

    def wait_for_task(
        self, dag_id: str, run_id: str, task_id: str, state: str, timeout: float = 600
    ) -> dict[str, Any]:
        """The task instance once it is in ``state`` (a run that ends first is an error)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            found = self.task_instances(dag_id, run_id).get(task_id)
            if found is not None and found["state"] == state:
                return found
            if self.api("GET", f"/dags/{dag_id}/dagRuns/{run_id}")["state"] in FINISHED:
                raise AssertionError(f"run {run_id} ended with {task_id} in {found}")
            time.sleep(0.5)
        raise TimeoutError(f"{task_id} of run {run_id} not {state} within {timeout} s")

    def hitl(self, dag_id: str, run_id: str, task_id: str) -> dict[str, Any]:
        """A human-in-the-loop task's request (subject, body, options, the response)."""
        return dict(
            self.api(
                "GET", f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/-1/hitlDetails"
            )
        )

    def respond(self, dag_id: str, run_id: str, task_id: str, option: str) -> dict[str, Any]:
        """Answer a human-in-the-loop request as a person in Browse -> Required Actions does.

        Airflow 3.3.2 races an answer given within a second of the task parking: the scheduler
        then takes the parked workload's late "success" event for the resumed try and runs the
        request again (a new try that waits anew). A person never answers that fast; the test
        waits for the workload's exit, which the task's log records as the end of its try.
        """
        deadline = time.monotonic() + 120
        parked = self.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        while time.monotonic() < deadline and not any(
            "Pausing task as AWAITING_INPUT" in log.read_text(errors="replace")
            for log in parked.glob("attempt=*.log")
        ):
            time.sleep(1)
        time.sleep(3)  # the supervisor's exit reaches the scheduler a heartbeat later
        return dict(
            self.api(
                "PATCH",
                f"/dags/{dag_id}/dagRuns/{run_id}/taskInstances/{task_id}/-1/hitlDetails",
                json={"chosen_options": [option]},
            )
        )

    def clear(self, dag_id: str, run_id: str, task_id: str) -> None:
        """Clear one task and what follows it in one run, as the UI's "Clear" does."""
        self.api(
            "POST",
            f"/dags/{dag_id}/clearTaskInstances",
            json={
                "dry_run": False,
                "dag_run_id": run_id,
                "task_ids": [task_id],
                "include_downstream": True,
                "only_failed": False,
                "reset_dag_runs": True,
            },
        )

    def logs(self) -> str:
        """Every task log and every component's output, as one text (for secret checks)."""
        parts = [p.read_text(errors="replace") for p in sorted(self.home.rglob("*.log"))]
        parts += [p.read_text(errors="replace") for p in sorted(self.home.glob("*.out"))]
        return "\n".join(parts)


@contextlib.contextmanager
def pg_schema(pg_url: str, prefix: str) -> Iterator[str]:
    """A fresh schema ``<prefix>_<random>`` in the PostgreSQL database of ``pg_url`` (a store's
    own, beside the other tests'), dropped with what it holds afterwards."""
    import psycopg

    schema = f"{prefix}_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute(f'create schema "{schema}"')
    try:
        yield schema
    finally:
        with psycopg.connect(pg_url, autocommit=True) as conn:
            conn.execute(f'drop schema "{schema}" cascade')


@contextlib.contextmanager
def deployment(home: Path, pg_url: str, **kwargs: Any) -> Iterator[Deployment]:
    running = Deployment(home, pg_url, **kwargs)
    try:
        yield running.start()
    except BaseException:
        for name in running.processes:
            out = home / f"{name}.out"
            if out.is_file():
                print(f"--- {name} ---\n{out.read_text(errors='replace')[-2000:]}")
        raise
    finally:
        running.stop()

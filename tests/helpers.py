"""Helpers tests import by name (``from helpers import ...``).

Kept out of conftest.py on purpose: several folders have a conftest.py, and ``from conftest
import`` would find whichever was loaded last.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DATA_ENV = "RETRIEVAL_EVAL_DATA"  # the shared data folder; relative paths start at the repo root
REQUIRE_DATA_ENV = "RETRIEVAL_EVAL_REQUIRE_DATA"
DEFAULT_DATA = "../shared/data"
PG_ENV = "RETRIEVAL_EVAL_TEST_PG"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


def required(env: str) -> bool:
    """True when ``env`` asks for a skip to become a failure (CI sets these)."""
    return os.environ.get(env, "").lower() not in ("", "0", "false", "no")


def shared_data() -> Path:
    """The folder of the shared BEIR collections: ``$RETRIEVAL_EVAL_DATA``, else ../shared/data."""
    return (ROOT / (os.environ.get(DATA_ENV) or DEFAULT_DATA)).resolve()


def shared_collection(name: str) -> Path:
    """A BEIR collection of the shared data folder, or a skip naming what is missing.

    Every test that reads the shared data comes through here. With ``RETRIEVAL_EVAL_REQUIRE_DATA``
    set (CI sets it) a missing collection is a failure: real data never skips silently.
    """
    path = shared_data() / name
    if not (path / "queries.jsonl").is_file():
        reason = (
            f"shared collection {name!r} not found: no {path / 'queries.jsonl'} "
            f"(${DATA_ENV} names the data folder, default {DEFAULT_DATA} from the repo root)"
        )
        if required(REQUIRE_DATA_ENV):
            pytest.fail(f"{reason}; ${REQUIRE_DATA_ENV} is set, so this is a failure")
        pytest.skip(reason)
    return path


@contextmanager
def tmpfs(folder: Path, size: str = "4m") -> Iterator[Path]:
    """A real tmpfs of ``size`` mounted on ``folder`` (made if missing), unmounted afterwards:
    a disk that fills up or (``mount -o remount,ro``) a read-only folder, which root's
    permissions cannot get around. Root only: a skip where this machine does not allow it."""
    folder.mkdir(parents=True, exist_ok=True)
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)]
    ).returncode:
        pytest.skip("this machine does not let root mount a tmpfs")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def read_only(folder: Path) -> None:
    """Remount the :func:`tmpfs` at ``folder`` read-only."""
    subprocess.run(["mount", "-o", "remount,ro", str(folder)], check=True)


def fill(folder: Path) -> None:
    """Fill the :func:`tmpfs` at ``folder`` to the last byte (writes fail with ENOSPC)."""
    with open(folder / "filler", "wb", buffering=0) as filler, contextlib.suppress(OSError):
        while filler.write(b"\0" * 4096):
            pass


def served_page(server: subprocess.Popen[str], url: str, timeout_s: float = 60) -> str:
    """The page at ``url`` once the ``server`` subprocess answers it; fails with the server's
    stderr if it exits first, or after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode())
        except OSError:
            if server.poll() is not None:
                pytest.fail(f"the server exited: {server.stderr.read() if server.stderr else ''}")
            if time.monotonic() > deadline:
                pytest.fail(f"nothing answered {url} within {timeout_s:g} s")
            time.sleep(0.1)


class Database:
    """A database of its own on the test server, that can be taken away and given back."""

    def __init__(self, admin: str, password: str, name: str | None = None) -> None:
        self.admin = admin
        self.name = name or f"re_spool_{uuid.uuid4().hex[:8]}"
        scheme, rest = admin.split("://", 1)
        user, host = rest.split("@", 1)
        self.url = f"{scheme}://{user}:{password}@{host.rsplit('/', 1)[0]}/{self.name}"

    def _sql(self, statement: str) -> None:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            conn.execute(statement)

    def exists(self) -> bool:
        import psycopg

        with psycopg.connect(self.admin, autocommit=True) as conn:
            found = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [self.name])
            return found.fetchone() is not None

    def create(self) -> None:
        self._sql(f'CREATE DATABASE "{self.name}"')

    def take_away(self) -> None:
        """Renamed away; its open sessions are ended first (a database in use cannot be)."""
        self._sql(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
            f"WHERE datname = '{self.name}' AND pid <> pg_backend_pid()"
        )
        self._sql(f'ALTER DATABASE "{self.name}" RENAME TO "{self.name}_away"')

    def give_back(self) -> None:
        self._sql(f'ALTER DATABASE "{self.name}_away" RENAME TO "{self.name}"')

    def drop(self) -> None:
        for name in (self.name, f"{self.name}_away"):
            self._sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

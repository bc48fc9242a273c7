"""Reads never block writes on SQLite: a reader (a read-only command, the dashboard) holding a
transaction open while another process saves a run must not make the save wait or fail.

Real files and real connections: the writer runs in another process, with the store's own busy
timeout, while this one holds a read transaction open on the same file.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from sqlalchemy import text

from retrieval_eval.store import open_store, open_store_to_read
from retrieval_eval.webui.source import StoreSource
from store.builders import hits, make_run

ROOT = Path(__file__).resolve().parents[2]
WRITER = """
import sys, time
sys.path.insert(0, sys.argv[2])
from retrieval_eval.store import open_store
from store.builders import hits, make_run
start = time.monotonic()
with open_store(sys.argv[1]) as store:
    store.runs.save(make_run(hits(3, 4), day=5))
print(time.monotonic() - start)
"""


def _save_elsewhere(url: str) -> float:
    """Save a run from another process; return how long it took (it fails on a lock)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", WRITER, url, str(ROOT / "tests")],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return float(done.stdout.strip().splitlines()[-1])


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(url) as store:
        store.runs.save(make_run(hits(2, 4)))
    return url


def test_a_read_only_command_holding_a_transaction_does_not_block_a_save(sqlite_url: str) -> None:
    with open_store_to_read(sqlite_url) as reader, reader.engine.connect() as conn:
        assert conn.execute(text("SELECT count(*) FROM eval_result")).scalar() == 1
        took = _save_elsewhere(sqlite_url)  # the read transaction is still open
        assert conn.execute(text("SELECT count(*) FROM eval_result")).scalar() == 1  # snapshot
    assert took < 10, f"the save waited {took:.1f} s for the reader"
    with open_store_to_read(sqlite_url) as reader:
        assert len(reader.history("demo.set", "bm25")) == 2


def test_the_dashboard_holding_a_transaction_does_not_block_a_save(sqlite_url: str) -> None:
    source = StoreSource(sqlite_url)
    try:
        store = source.store()
        assert store is not None
        with store.engine.connect() as conn:
            conn.execute(text("SELECT count(*) FROM eval_result")).scalar()
            started = time.monotonic()
            took = _save_elsewhere(sqlite_url)
        assert took < 10 and time.monotonic() - started < 60
    finally:
        source.close()


def test_a_read_only_store_never_writes_the_file(sqlite_url: str) -> None:
    with (
        open_store_to_read(sqlite_url) as reader,
        reader.engine.begin() as conn,
        pytest.raises(Exception, match=r"readonly|read-only"),
    ):
        conn.execute(text("DELETE FROM eval_result"))

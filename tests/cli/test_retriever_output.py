"""What a retriever does to the process cannot spoil the report: its output (Python's and
descriptor 1's, from the calling thread, call threads, C code and a child process) goes to stderr,
so ``run --format json`` prints exactly the report; a non-daemon thread it leaves running is
named in a warning and the process still exits. Real ``retrieval-eval`` processes.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from cli.test_cli_core import EXE, TWO_QUESTIONS

LOUD = ("loud-print", "loud-sys.stdout", "loud-fd-1", "loud-c-printf", "loud-child")


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """A cwd with two.yaml (two questions, both answered by "a") and process_retrievers.py."""
    (tmp_path / "two.yaml").write_text(TWO_QUESTIONS)
    shutil.copy(Path(__file__).with_name("process_retrievers.py"), tmp_path)
    return tmp_path


def environment(work: Path) -> dict[str, str]:
    """The test's own store and home; nothing from the caller's config."""
    env = {**os.environ, "RETRIEVAL_EVAL_HOME": str(work / "home")}
    env["RETRIEVAL_EVAL_DB"] = f"sqlite:///{work / 'results.sqlite'}"
    env.pop("RETRIEVAL_EVAL_CONFIG", None)
    return env


def stored_runs(work: Path) -> int:
    """Runs in the test's store; 0 while there is none (no file, or its tables being made)."""
    if not (work / "results.sqlite").exists():
        return 0
    try:
        with sqlite3.connect(work / "results.sqlite") as conn:
            return int(conn.execute("SELECT count(*) FROM eval_result").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def run(
    work: Path, retriever: str, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(EXE), "run", "two.yaml", f"process_retrievers:{retriever}", *args],
        cwd=work,
        env=environment(work),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.mark.parametrize("threads", [[], ["--max-concurrency", "2"]], ids=["one", "two"])
def test_retriever_output_goes_to_stderr_and_stdout_is_the_report(
    work: Path, threads: list[str]
) -> None:
    done = run(work, "loud", "--format", "json", *threads)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)  # nothing but the report: it parses
    assert report["question_count"] == 2 and report["top1_hits"] == 1
    assert "process_retrievers imported" in done.stderr  # the module's own code, when checked
    for way in LOUD:
        for question in ("first", "second"):
            assert f"{way} {question}" in done.stderr, (way, done.stderr)
        assert way not in done.stdout


def test_a_leaked_non_daemon_thread_is_named_and_the_process_still_exits(work: Path) -> None:
    done = run(work, "leaky", "--format", "json", timeout=30)  # it never exited before
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["run_id"] == 1  # the report is printed, the run saved
    assert stored_runs(work) == 1
    assert "thread(s) still running after the command: 'leaky-poller'" in done.stderr
    assert "exiting without waiting for them" in done.stderr

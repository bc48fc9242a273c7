"""Output paths that cannot be written (``run --output``, ``runs report -o``, the exports): exit 2
naming the option, the path and the fix, never a traceback; ``run`` checks before evaluating and,
when the write still fails afterwards, keeps the saved run and names it. A report on stdout that
cannot be written (``run > /dev/full``, a real process) is the same error."""

from __future__ import annotations

import os
import sqlite3
import subprocess
from pathlib import Path

import pytest
from helpers import EXAMPLES

from cli.test_cli_core import EXE, invoke, isolate_env

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")
RUN = ("run", "handbook.demo", "handbook_bm25", "--config", CONFIG)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _stored_runs(home: Path) -> list[int]:
    with sqlite3.connect(home / "results.sqlite") as conn:
        return [row[0] for row in conn.execute("SELECT id FROM eval_result")]


def test_run_into_a_missing_folder_fails_before_evaluating(home: Path) -> None:
    target = home / "missing" / "report.md"
    result = invoke(*RUN, "--output", str(target))
    assert result.exit_code == 2, result.output
    assert f"--output {target}: cannot write it (the folder {target.parent} does not exist)" in (
        result.stderr
    )
    assert "Traceback" not in result.output
    assert not (home / "results.sqlite").exists()  # nothing ran, so nothing was stored


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_write_failing_after_the_run_keeps_the_run_and_names_it(home: Path) -> None:
    result = invoke(*RUN, "--output", "/dev/full")
    assert result.exit_code == 2, result.output
    assert "handbook.demo × handbook_bm25, run 1: top-1" in result.stderr  # the headline
    assert "--output /dev/full: cannot write it (No space left on device)" in result.stderr
    assert "the run is saved as run 1 in sqlite:///" in result.stderr
    assert "`retrieval-eval runs show 1 --format text > FILE`" in result.stderr
    assert _stored_runs(home) == [1]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_report_stdout_cannot_take_exits_2_naming_the_saved_run(home: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(EXE), *RUN, "--format", "json"],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert "stdout: cannot write the report (No space left on device)" in done.stderr
    assert "the run is saved as run 1 in sqlite:///" in done.stderr
    assert "`retrieval-eval runs show 1 --format json > FILE`" in done.stderr
    assert _stored_runs(home) == [1]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_stdout_full_and_the_store_down_say_both_and_keep_the_stores_exit_code(
    home: Path,
) -> None:
    down = "postgresql://eval:Sup3r-Secr3t@127.0.0.1:1/results"
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(EXE), *RUN, "--db", down],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
            env={**os.environ, "RETRIEVAL_EVAL_DB": ""},
        )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "Sup3r-Secr3t" not in done.stderr
    assert "stdout: cannot write the report (No space left on device)" in done.stderr
    (spooled,) = (home / "home" / "spool").glob("*.json")
    assert "the run was not saved: cannot reach the result store" in done.stderr
    assert f"the run was spooled to {spooled}" in done.stderr


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("--help",), ("sets", "list", "--config", CONFIG)])
def test_any_command_stdout_cannot_take_exits_2_without_a_traceback(
    home: Path, args: tuple[str, ...]
) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [str(EXE), *args], stdout=full, stderr=subprocess.PIPE, text=True, timeout=60
        )
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr
    assert done.stderr.strip() == (
        "error: stdout: cannot write the output (No space left on device): "
        "write it to a file with room (> FILE)"
    )


def test_report_html_into_a_missing_folder_exits_2(home: Path) -> None:
    assert invoke(*RUN).exit_code == 0
    target = home / "missing" / "x.html"
    result = invoke("runs", "report", "1", "-o", str(target))
    assert result.exit_code == 2, result.output
    assert f"--output {target}: cannot write it" in result.stderr
    assert "give a path in an existing folder you can write to" in result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("sets", "export-qrels", "handbook.demo", "--config", CONFIG, "-o"),
        ("sets", "import-beir", str(EXAMPLES / "beir-mini"), "-o"),
    ],
    ids=["export-qrels", "import-beir"],
)
def test_a_file_in_the_way_of_an_export_folder_exits_2(home: Path, args: tuple[str, ...]) -> None:
    (home / "afile").write_text("x")
    target = home / "afile" / "out.tsv"
    result = invoke(*args, str(target))
    assert result.exit_code == 2, result.output
    assert f"--output {target}: cannot write it" in result.stderr

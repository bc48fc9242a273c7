"""Hostile store input through the real ``retrieval-eval`` executable.

Any store error when a run is recorded (an unknown URL option, a file that is not a database)
exits 3 with the report printed and the run spooled; run ids a store cannot hold exit 2 with
"no stored run" on both backends.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import EXAMPLES

from cli.test_cli_core import run_script

DEMO = ["handbook.demo", "handbook_bm25", "--config", str(EXAMPLES / "retrieval_eval.yaml")]


def _env(tmp_path: Path) -> dict[str, str]:
    return {"RETRIEVAL_EVAL_HOME": str(tmp_path / "home"), "RETRIEVAL_EVAL_DB": ""}


@pytest.mark.parametrize("kind", ["unknown postgresql option", "sqlite text file"])
def test_any_store_error_when_saving_exits_3_prints_the_report_and_spools(
    kind: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    if kind == "sqlite text file":
        text = tmp_path / "notes.txt"
        text.write_text("not a database, just some notes\n" * 50)
        db, reason = f"sqlite:///{text}", "file is not a database"
    else:
        db = request.getfixturevalue("pg_url") + "?bogusopt=1"
        reason = 'invalid connection option "bogusopt"'
    done = run_script(
        "run", *DEMO, "--db", db, "--format", "json", cwd=tmp_path, env=_env(tmp_path)
    )
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)  # the report is printed
    assert report["question_count"] == 46 and report["saved"] is False
    spool = Path(report["spool_path"])
    assert spool.parent == tmp_path / "home" / "spool" and spool.is_file()
    assert str(spool) in done.stderr
    assert reason in report["regression"]["summary"]  # the driver's reason, in the verdict
    if kind == "sqlite text file":
        assert text.read_text().startswith("not a database")  # left as it was


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
@pytest.mark.parametrize(
    "command",
    [["runs", "show"], ["runs", "accept"], ["runs", "export"], ["runs", "report", "-o", "-"]],
)
def test_run_ids_out_of_range_are_unknown_runs(
    backend: str, command: list[str], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    db = request.getfixturevalue("pg_url") if backend == "postgresql" else None
    db = db or f"sqlite:///{tmp_path / 'results.sqlite'}"
    for run_id in ("3000000000", "2147483648", "0", "-5"):
        done = run_script(*command, "--db", db, "--", run_id, cwd=tmp_path, env=_env(tmp_path))
        assert done.returncode == 2, (run_id, done.stderr)
        assert f"no stored run with id {run_id}" in done.stderr, done.stderr
        assert "Traceback" not in done.stderr and "out of range" not in done.stderr


def test_a_pinned_baseline_out_of_range_fails_before_the_run(tmp_path: Path) -> None:
    done = run_script("run", *DEMO, "--baseline", "3000000000", cwd=tmp_path, env=_env(tmp_path))
    assert done.returncode == 2, done.stderr
    assert "no stored run with id 3000000000" in done.stderr
    assert done.stdout == ""  # nothing ran

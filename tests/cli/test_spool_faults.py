"""A store that is down when the spool cannot take the run either (a real tmpfs, full or
read-only), through the real ``retrieval-eval``: the report is printed, the run goes to a new
folder of the temporary folder, or, when that fails too, the message says it was written
nowhere; exit 3 and no ``.partial`` left behind.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import fill, read_only, tmpfs

from cli import test_cli_core
from cli.test_cli_core import invoke, run_script

DOWN = "postgresql://eval:Sup3r-Secr3t@127.0.0.1:1/results"  # nothing listens on port 1
# the core tests' cwd: two.yaml and cli_fake_retrievers; RETRIEVAL_EVAL_HOME is tmp_path/home
workdir = test_cli_core.workdir
TWO_DOWN = ["run", "two.yaml", "cli_fake_retrievers:always_a", "--db", DOWN, "--format", "json"]


@pytest.fixture(params=["read-only", "full"])
def broken_spool(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """RETRIEVAL_EVAL_HOME (tmp_path/home) on a real tmpfs whose spool folder cannot take a run:
    remounted read-only, or filled to the last byte (a file can still be created there, not
    written); with the reason the system gives."""
    with tmpfs(tmp_path / "home", size="256k") as home:
        (home / "spool").mkdir()
        if request.param == "full":
            fill(home)
            yield home / "spool", "No space left on device"
        else:
            read_only(home)
            yield home / "spool", "Read-only file system"


def test_store_down_and_spool_unwritable_keep_the_run_in_a_temporary_folder(
    workdir: Path, tmp_path: Path, broken_spool: tuple[Path, str]
) -> None:
    spool, reason = broken_spool
    temp = tmp_path / "tmp"
    temp.mkdir()
    done = run_script(*TWO_DOWN, cwd=workdir, env={"TMPDIR": str(temp)})
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr
    report = json.loads(done.stdout)  # the report is printed
    (kept,) = temp.glob("retrieval-eval-spool-*/*.json")
    assert report["spool_path"] == str(kept) and report["saved"] is False
    # both failures and where the run went, in the error and in the report's verdict
    for said in (done.stderr, report["regression"]["summary"]):
        assert "cannot reach the result store at postgresql+psycopg://eval:***@127.0.0.1:1" in said
        assert f"the spool folder {spool} could not take the run ({reason})" in said
        assert f"so it was written to {kept} instead" in said
        assert f"`retrieval-eval db flush --spool-dir {kept.parent}`" in said
    assert "Sup3r-Secr3t" not in done.stdout + done.stderr
    assert list(spool.iterdir()) == []  # no .partial left behind
    # the file in the temporary folder replays like any spooled run
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    replay = run_script("db", "flush", "--spool-dir", str(kept.parent), "--db", db, cwd=workdir)
    assert replay.returncode == 0, replay.stderr
    assert "saved 1 spooled run(s)" in replay.stdout and not kept.exists()


def test_store_spool_and_temporary_folder_all_unwritable_still_print_the_report(
    workdir: Path,
    tmp_path: Path,
    broken_spool: tuple[Path, str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    spool, reason = broken_spool
    with tmpfs(tmp_path / "tmp", size="64k") as temp:
        read_only(temp)
        monkeypatch.setattr(tempfile, "tempdir", str(temp))  # the system's temporary folder
        done = invoke(*TWO_DOWN)
        assert list(temp.iterdir()) == []
    assert done.exit_code == 3, done.output
    assert isinstance(done.exception, SystemExit)
    report = json.loads(done.stdout)
    assert report["question_count"] == 2 and "spool_path" not in report
    assert f"the spool folder {spool} could not take the run ({reason})" in done.stderr
    assert f"nor could a new folder in {temp} (Read-only file system)" in done.stderr
    assert "the run was written nowhere, its report is all there is" in done.stderr
    assert list(spool.iterdir()) == []

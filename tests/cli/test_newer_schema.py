"""A store a newer retrieval-eval migrated: every command says so, names the revision and tells
to upgrade the package; exit 2, no traceback, ``db upgrade`` included (Alembic never sees it).
``run`` prints its report and spools the run (``db flush`` saves it once the package is
upgraded); ``db flush`` leaves the files. Both backends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from sqlalchemy import text
from store.builders import pg_schema

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store
from retrieval_eval.store.migrate import head_revision
from retrieval_eval.store.names import VERSION_TABLE

ROOT = Path(__file__).resolve().parents[2]
FUTURE = "0099_from_a_newer_version"
TWO = "identifier: newer.two\nquestions:\n" + "".join(
    f"  - {{id: q{i}, question: q{i}, form: match, expected_document_ids: [a]}}\n" for i in (1, 2)
)


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def newer_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A store stamped with a revision no migration of this version knows (every command
    refuses it, so the tests share it)."""
    sqlite = f"sqlite:///{tmp_path_factory.mktemp('newer') / 'results.sqlite'}"
    database: AbstractContextManager[str] = nullcontext(sqlite)
    if request.param == "postgresql":
        database = pg_schema(request.getfixturevalue("pg_url"))
    with database as url:
        with open_store(url) as store, store.engine.begin() as conn:
            conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": FUTURE})
        yield url


@pytest.fixture
def newer_db(newer_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """:func:`newer_url`, from a cwd with a two-question set (two.yaml) and a retriever
    (newer_retrievers:always_a), spooling into tmp_path/home."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    (tmp_path / "two.yaml").write_text(TWO)
    (tmp_path / "newer_retrievers.py").write_text("def always_a(q, limit):\n    return ['a']\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    return newer_url


def _says_newer(output: str) -> None:
    assert FUTURE in output and "newer retrieval-eval" in output, output
    assert "upgrade the retrieval-eval package" in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    "args",
    [
        ["db", "upgrade"],
        ["runs", "list", "handbook.demo", "handbook_bm25"],
        ["runs", "show", "1"],
        ["compare", "handbook.demo"],
        ["runs", "prune", "--older-than", "30"],
        ["runs", "accept", "1"],
        ["runs", "export", "1"],
        ["runs", "report", "-o", "-", "1"],
        ["drift", "traffic", "handbook_bm25"],
        ["run", "two.yaml", "newer_retrievers:always_a", "--no-save"],
    ],
)
def test_every_command_says_a_newer_version_migrated_the_store(
    newer_db: str, args: list[str]
) -> None:
    result = CliRunner().invoke(cli, [*args, "--db", newer_db])
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    _says_newer(result.stderr)


def _run(db: str) -> Result:
    return CliRunner().invoke(
        cli, ["run", "two.yaml", "newer_retrievers:always_a", "--format", "json", "--db", db]
    )


def test_run_prints_the_report_spools_the_run_and_exits_2(newer_db: str, tmp_path: Path) -> None:
    done = _run(newer_db)
    assert done.exit_code == 2, (done.output, done.exception)
    _says_newer(done.stderr)
    report = json.loads(done.stdout)  # the report is printed
    assert report["question_count"] == 2 and report["saved"] is False
    spool = Path(report["spool_path"])
    assert spool.parent == tmp_path / "home" / "spool" and spool.is_file()
    assert f"the run was spooled to {spool}: save it once retrieval-eval is upgraded" in (
        done.stderr
    )


def test_db_replay_leaves_the_spooled_runs_and_exits_2(newer_db: str) -> None:
    spooled = Path(json.loads(_run(newer_db).stdout)["spool_path"])
    done = CliRunner().invoke(cli, ["db", "flush", "--db", newer_db])
    assert done.exit_code == 2, (done.output, done.exception)
    _says_newer(done.stderr)
    assert done.stderr.count(FUTURE) == 1  # said once, not once more per file
    assert f"left in place: {spooled}" in done.stderr and spooled.is_file()
    assert "flush them once retrieval-eval is upgraded" in done.stderr


def test_db_upgrade_in_a_real_process_exits_2_without_a_traceback(newer_db: str) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [str(Path(sys.executable).parent / "retrieval-eval"), "db", "upgrade", "--db", newer_db],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    _says_newer(done.stderr)
    assert "Can't locate revision" not in done.stderr


def test_the_known_revisions_are_the_migration_scripts() -> None:
    from retrieval_eval.store.names import KNOWN_REVISIONS

    assert KNOWN_REVISIONS[-1] == head_revision()
    from alembic.script import ScriptDirectory

    from retrieval_eval.store.migrate import alembic_config

    scripts = ScriptDirectory.from_config(alembic_config())
    assert sorted(KNOWN_REVISIONS) == sorted(s.revision for s in scripts.walk_revisions())

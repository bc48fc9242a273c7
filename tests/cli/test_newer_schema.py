"""A store a newer retrieval-eval migrated: every command says so, names the revision and tells
to upgrade the package; exit 2, no traceback, ``db upgrade`` included (Alembic never sees it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from sqlalchemy import text

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store
from retrieval_eval.store.migrate import head_revision
from retrieval_eval.store.names import VERSION_TABLE

ROOT = Path(__file__).resolve().parents[2]
FUTURE = "0099_from_a_newer_version"


@pytest.fixture
def newer_db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(url) as store, store.engine.begin() as conn:
        conn.execute(text(f"UPDATE {VERSION_TABLE} SET version_num = :v"), {"v": FUTURE})
    return url


def _says_newer(output: str) -> None:
    assert FUTURE in output and "newer retrieval-eval" in output, output
    assert "upgrade the retrieval-eval package" in output, output
    assert "Traceback" not in output


@pytest.mark.parametrize(
    "args",
    [
        ["db", "upgrade"],
        ["history", "handbook.demo", "handbook_bm25"],
        ["show", "1"],
        ["compare", "handbook.demo"],
        ["prune", "--older-than", "30"],
    ],
)
def test_every_command_says_a_newer_version_migrated_the_store(
    newer_db: str, args: list[str]
) -> None:
    result = CliRunner().invoke(cli, [*args, "--db", newer_db])
    assert result.exit_code == 2, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit)
    _says_newer(result.stderr)


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

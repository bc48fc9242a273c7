"""A replay survives real faults as a run does, through the real ``retrieval-eval``:

- its PostgreSQL database renamed away while the retriever answers (by the retriever itself, on
  its first call, with ``ALTER DATABASE ... RENAME``, which PostgreSQL refuses while any other
  session is connected: so it also shows the replay holds no connection while it retrieves): the
  report is printed, the replay spooled, exit 3, and ``db flush`` saves it compared with the
  replay before it once the database is back;
- a spool folder on a full tmpfs: the replay goes to a new folder of the temporary folder, or,
  when that fails too, the message says it was written nowhere; exit 3 either way;
- a write no command handled that is not stdout's is not called stdout's (exit 3, the traceback
  with ``--debug``), and ``--export-draft`` on a full disk names its path (exit 2).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import Database, fill, read_only, tmpfs

from cli import test_spooled_replays
from cli.replay_configs import LOG, invoke, write_config
from cli.test_spooled_replays import DOWN, PASSWORD
from retrieval_eval.store import open_store

EXE = Path(sys.executable).parent / "retrieval-eval"
database = test_spooled_replays.database  # a PostgreSQL database of the test's own
RETRIEVER = "renaming_retrievers:answer"
RENAMING = '''
import os

import psycopg

renamed = []


def answer(question, limit):
    """Ids from the question's words; the first call renames the database RE_RENAME names
    ("ADMIN_URL NAME") away, without ending anyone's session (refused, that query's error,
    while another session is connected to it)."""
    named = os.environ.get("RE_RENAME")
    if named and not renamed:
        renamed.append(named)  # once: PostgreSQL waits 5 s for other sessions before refusing
        admin, name = named.split(" ", 1)
        with psycopg.connect(admin, autocommit=True) as connection:
            connection.execute(f'ALTER DATABASE "{name}" RENAME TO "{name}_away"')
    return [f"doc-{len(word)}" for word in question.split()][:limit]
'''


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "renaming_retrievers.py").write_text(RENAMING)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "renaming_retrievers", raising=False)
    monkeypatch.delenv("RE_RENAME", raising=False)
    return write_config(tmp_path, monkeypatch, {"samples": {"log": {"source": {"path": LOG}}}})


def test_a_store_renamed_while_the_retriever_answers_spools_the_replay(
    config: Path, tmp_path: Path, database: Database, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args = ["replay", "log", RETRIEVER, "--db", database.url, "--format", "json"]
    first = invoke(config, *args)
    assert first.exit_code == 0, first.output
    first_id = json.loads(first.stdout)["replay_id"]

    monkeypatch.setenv("RE_RENAME", f"{pg_url} {database.name}")
    away = invoke(config, *args)
    assert away.exit_code == 3, away.output
    # renamed on the first answer: no session of the replay's was open then
    assert not database.exists()
    doc = json.loads(away.stdout)  # the report is printed
    assert doc["errors"] == 0 and doc["replay_id"] is None
    (path,) = (tmp_path / "home" / "spool").glob("replay-*.json")
    assert doc["spool_path"] == str(path)
    assert f"the replay was spooled to {path}" in away.stderr
    assert "cannot reach the result store at postgresql+psycopg://postgres:***@" in away.stderr
    assert "`retrieval-eval db flush`, which compares it with the replay of its series" in (
        away.stderr
    )
    assert PASSWORD not in away.output and PASSWORD not in path.read_text()
    assert "Traceback" not in away.output

    database.give_back()
    saved = invoke(config, "db", "flush", "--db", database.url)
    assert saved.exit_code == 0, saved.output
    with open_store(database.url) as store:
        newest, oldest = store.replays.history("log", RETRIEVER)
    assert oldest.id == first_id and newest.compared_id == first_id
    assert newest.run_key == doc["run_key"] and newest.state == "no_drift"


@pytest.fixture
def full_spool(tmp_path: Path) -> Iterator[Path]:
    """$RETRIEVAL_EVAL_HOME/spool on a real 64k tmpfs filled to the last byte."""
    with tmpfs(tmp_path / "home" / "spool", size="64k") as spool:
        fill(spool)
        yield spool


def _replay_script(config: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(EXE), "replay", "log", RETRIEVER, "--config", str(config), *args],
        cwd=config.parent,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
    )


def test_store_down_and_spool_full_keep_the_replay_in_a_temporary_folder(
    config: Path, tmp_path: Path, full_spool: Path
) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"TMPDIR": str(temp), "RETRIEVAL_EVAL_HOME": str(tmp_path / "home")}
    done = _replay_script(config, "--db", DOWN, "--format", "json", env=env)
    assert done.returncode == 3, done.stderr
    assert "Traceback" not in done.stderr and "stdout:" not in done.stderr
    report = json.loads(done.stdout)  # the report is printed
    (kept,) = temp.glob("retrieval-eval-spool-*/replay-*.json")
    assert report["spool_path"] == str(kept) and report["replay_id"] is None
    for said in (done.stderr, report["notes"][-1]):
        assert "cannot reach the result store at postgresql+psycopg://eval:***@127.0.0.1:1" in said
        assert (
            f"the spool folder {full_spool} could not take the replay (No space left on device)"
            in said
        )
        assert f"so it was written to {kept} instead" in said
        assert f"`retrieval-eval db flush --spool-dir {kept.parent}`" in said
    assert PASSWORD not in done.stdout + done.stderr
    assert [p.name for p in full_spool.iterdir()] == ["filler"]  # no .partial left behind
    # the file in the temporary folder is saved like any spooled replay
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    saved = invoke(config, "db", "flush", "--spool-dir", str(kept.parent), "--db", db)
    assert saved.exit_code == 0, saved.output
    assert "saved 1 spooled replay(s)" in saved.stdout and not kept.exists()


def test_store_down_spool_and_temporary_folder_full_still_print_the_report(
    config: Path, tmp_path: Path, full_spool: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with tmpfs(tmp_path / "tmp", size="64k") as temp:
        read_only(temp)
        monkeypatch.setattr(tempfile, "tempdir", str(temp))  # the system's temporary folder
        done = invoke(config, "replay", "log", RETRIEVER, "--db", DOWN, "--format", "json")
        assert list(temp.iterdir()) == []
    assert done.exit_code == 3, done.output
    report = json.loads(done.stdout)
    assert report["queries"] > 0 and report["spool_path"] is None
    assert "could not take the replay (No space left on device)" in done.stderr
    assert f"nor could a new folder in {temp} (Read-only file system)" in done.stderr
    assert "the replay was written nowhere, its report is all there is" in done.stderr
    assert [p.name for p in full_spool.iterdir()] == ["filler"]


def test_an_export_draft_on_a_full_disk_names_it_and_keeps_the_replay(
    config: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    assert invoke(config, "replay", "log", RETRIEVER, "--db", db).exit_code == 0
    with tmpfs(tmp_path / "drafts", size="64k") as drafts:
        fill(drafts)
        target = drafts / "draft.jsonl"
        done = invoke(config, "replay", "log", RETRIEVER, "--db", db, "--export-draft", str(target))
    assert done.exit_code == 2, done.output
    assert f"--export-draft {target}: cannot write it (No space left on device)" in done.stderr
    assert (
        "the replay was saved: Saved as replay 2 in " in done.stderr
        and "stdout:" not in done.stderr
    )
    with open_store(db) as store:
        assert [r.id for r in store.replays.history("log", RETRIEVER)] == [2, 1]


FILLS = """
import sys

import click

from retrieval_eval.cli import cli, main


@cli.command("fill-file")
@click.argument("path")
def fill_file(path):
    click.echo("some output first")
    with open(path, "w") as handle:
        handle.write("x" * 100_000)


main(sys.argv[1:])
"""


@pytest.mark.parametrize("debug", [False, True])
def test_a_full_disk_that_is_not_stdout_is_not_called_stdout(tmp_path: Path, debug: bool) -> None:
    with tmpfs(tmp_path / "disk", size="64k") as disk:
        done = subprocess.run(
            [sys.executable, "-c", FILLS, *(["--debug"] if debug else []), "fill-file",
             str(disk / "out.txt")],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert done.stdout == "some output first\n"
    assert "stdout:" not in done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("error: a write to a file failed (No space left on device; not stdout)")
    assert ("Traceback" in done.stderr) is debug


def test_stdout_that_cannot_take_the_output_is_still_named(tmp_path: Path) -> None:
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-c", FILLS, "fill-file", str(tmp_path / "out.txt")],
            stdout=full, stderr=subprocess.PIPE, text=True, timeout=60,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        "error: stdout: cannot write the output (No space left on device): "
        "write it to a file with room (> FILE)"
    )


def _log(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "bad.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_nul_character_in_a_query_is_exit_2_before_postgresql_sees_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, database: Database
) -> None:
    log = _log(tmp_path, [{"query": "vpn"}, {"query": "reset\u0000password"}])
    config = write_config(
        tmp_path, monkeypatch, {"samples": {"bad": {"source": {"path": str(log)}}}}
    )
    done = invoke(config, "samples", "build", "bad", "--db", database.url)
    assert done.exit_code == 2, done.output
    assert f"{log}: line 2: text: holds a NUL character (\\x00)" in done.stderr
    assert "remove it from the log" in done.stderr and "Traceback" not in done.output
    with open_store(database.url) as store:
        assert store.replays.latest_sample("bad") is None  # nothing stored


@pytest.mark.parametrize("count", [2**63, 2**40])
def test_a_count_the_store_cannot_keep_is_exit_2_naming_its_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, count: int
) -> None:
    log = _log(tmp_path, [{"query": "vpn", "count": 3}, {"query": "refund", "count": count}])
    config = write_config(
        tmp_path, monkeypatch, {"samples": {"bad": {"source": {"path": str(log)}}}}
    )
    done = invoke(config, "samples", "build", "bad")  # the default SQLite store
    assert done.exit_code == 2, done.output
    assert f"{log}: line 2: count: {count} is more than the result store keeps" in done.stderr
    assert "Traceback" not in done.output


def test_a_syntax_error_in_a_samples_sql_is_exit_2_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = {"url": f"sqlite:///{tmp_path / 'logs.sqlite'}", "query": "selec text frm log"}
    config = write_config(tmp_path, monkeypatch, {"samples": {"bad": {"source": source}}})
    done = invoke(config, "samples", "build", "bad")
    assert done.exit_code == 2, done.output
    assert "samples.bad.query: the query log's database at sqlite:///" in done.stderr
    assert 'near "selec": syntax error; fix the SQL' in done.stderr
    assert "result store" not in done.stderr

"""``db flush`` saves each spooled run into the store it was meant for, sets aside what cannot be
replayed and replays the rest, and two replays of one folder never trip over each other.

The spool files are real files; the two concurrent replays are real processes; the read-only
spool folder is a real read-only tmpfs (where this machine lets root mount one).
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import read_only, tmpfs

from retrieval_eval.cli import cli
from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import mask_url, open_store
from retrieval_eval.store.spool import SpooledRun, write_spool
from retrieval_eval.store.url import store_fingerprint
from retrieval_eval.workflows.recording import record_run
from store.builders import hits, make_run

EXE = Path(sys.executable).parent / "retrieval-eval"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder without a config, its own RETRIEVAL_EVAL_HOME, no store variable."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path / "home"


def spool(result: RunResult, url: str | None, folder: Path, **fields: object) -> Path:
    """Spool ``result`` as ``run`` does for the store at ``url`` (None: a file of an older
    version, which recorded no store)."""
    recorded = (
        {} if url is None else {"store": mask_url(url), "store_fingerprint": store_fingerprint(url)}
    )
    entry = SpooledRun(result=result, thresholds=Thresholds(), **recorded, **fields)  # type: ignore[arg-type]
    return write_spool(entry, folder)


def replay(*args: str) -> Result:
    return CliRunner().invoke(cli, ["db", "replay", *args])


def keys(url: str) -> list[str]:
    with open_store(url) as store:
        return [r.result.run_key for r in store.history("demo.set", "bm25")]


def test_a_run_replays_into_the_store_it_was_spooled_for(home: Path, tmp_path: Path) -> None:
    meant = f"sqlite:///{tmp_path / 'team.sqlite'}"
    path = spool(make_run(hits(3, 4)), meant, home / "spool")
    done = replay()  # no --db, no config: the default store would be home/results.sqlite
    assert done.exit_code == 0, done.output
    assert f"into {mask_url(meant)}" in done.stdout
    assert not path.exists() and len(keys(meant)) == 1
    assert not (home / "results.sqlite").exists()  # no new default store


def test_the_password_comes_from_the_store_the_flags_name_when_it_is_the_same(
    home: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sqlalchemy.engine import make_url

    from store.builders import pg_schema

    with pg_schema(pg_url) as url:
        with_password = make_url(url).set(password="n0t-Shown-9").render_as_string(False)
        path = spool(make_run(hits(3, 4)), with_password, home / "spool")
        assert "n0t-Shown-9" not in path.read_text(encoding="utf-8")
        unknown = replay()  # the file's URL is masked and nothing names the store here
        assert unknown.exit_code == 2, unknown.output
        assert "whose full URL this replay does not have" in unknown.stderr
        rejected = home / "spool" / "rejected" / path.name
        assert rejected.is_file() and rejected.with_name(path.name + ".reason").is_file()
        assert "n0t-Shown-9" not in unknown.output
        monkeypatch.setenv("RETRIEVAL_EVAL_DB", with_password)
        again = replay("--spool-dir", str(rejected.parent))
        assert again.exit_code == 0, again.output
        assert len(keys(with_password)) == 1


def test_an_explicit_db_overrides_the_recorded_store_and_says_so(
    home: Path, tmp_path: Path
) -> None:
    meant, other = (f"sqlite:///{tmp_path / n}" for n in ("team.sqlite", "other.sqlite"))
    spool(make_run(hits(3, 4)), meant, home / "spool")
    done = replay("--db", other)
    assert done.exit_code == 0, done.output
    assert "--db given: 1 of them had been spooled for another store" in done.stderr
    assert len(keys(other)) == 1 and not Path(tmp_path / "team.sqlite").exists()


def test_an_old_spool_file_without_a_store_replays_into_the_flags_store(
    home: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    path = spool(make_run(hits(3, 4)), None, home / "spool")
    assert "store" not in json.loads(path.read_text(encoding="utf-8")) or True
    done = replay("--db", db)
    assert done.exit_code == 0, done.output
    assert len(keys(db)) == 1


def test_a_run_pinned_to_a_pruned_baseline_is_set_aside_and_the_others_replayed(
    home: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    pinned = spool(make_run(hits(3, 4), day=0), db, home / "spool", baseline_run_id=77)
    spool(make_run(hits(2, 4), day=1), db, home / "spool")
    spool(make_run(hits(4, 4), day=2), db, home / "spool")
    done = replay()
    assert done.exit_code == 2, done.output
    assert "saved 2 spooled run(s)" in done.stdout
    assert "Traceback" not in done.output and "no stored run with id 77" in done.stderr
    aside = home / "spool" / "rejected" / pinned.name
    assert aside.is_file() and "77" in aside.with_name(pinned.name + ".reason").read_text()
    assert len(keys(db)) == 2 and list((home / "spool").glob("*.json")) == []
    assert replay().stdout.startswith("no spooled runs in ")  # rejected/ is not replayed again


def test_an_unreadable_file_is_set_aside_and_the_next_replay_saves_the_rest(
    home: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    spool(make_run(hits(3, 4)), db, home / "spool")
    (home / "spool" / "broken.json").write_text("{not json", encoding="utf-8")
    first = replay()
    assert first.exit_code == 2 and "broken.json: not a readable spooled run" in first.stderr
    assert (home / "spool" / "rejected" / "broken.json.reason").is_file()
    second = replay()
    assert second.exit_code == 0, second.output
    assert len(keys(db)) == 1


def test_the_hint_after_a_spooled_run_names_the_store(tmp_path: Path) -> None:
    down = "postgresql://eval:pa55-w0rd@127.0.0.1:1/results"
    recorded = record_run(
        make_run(hits(1, 2)), store_url=down, thresholds=Thresholds(), spool_dir=tmp_path
    )
    assert "which saves it into postgresql+psycopg://eval:***@127.0.0.1:1/results" in (
        verdict_summary(recorded.verdict)
    )
    assert f"db flush --spool-dir {tmp_path}" in verdict_summary(recorded.verdict)


def _cli_env(home: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "RETRIEVAL_EVAL_HOME": str(home)}


def test_a_replay_while_another_holds_the_lock_says_so_and_leaves_the_files(
    home: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    path = spool(make_run(hits(3, 4)), db, home / "spool")
    fd = os.open(home / "spool", os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # what a running replay holds
        busy = subprocess.run(
            [str(EXE), "db", "replay"],
            capture_output=True,
            text=True,
            env=_cli_env(home),
            timeout=60,
        )
    finally:
        os.close(fd)
    assert busy.returncode == 0, busy.stderr
    assert "another `retrieval-eval db flush` is flushing" in busy.stderr
    assert "Traceback" not in busy.stderr and path.is_file()


def test_two_replays_at_once_never_trace_back_and_save_each_run_once(
    home: Path, tmp_path: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    for day in range(40):
        spool(make_run(hits(day % 4, 4), day=day), db, home / "spool")
    procs = [
        subprocess.Popen(
            [str(EXE), "db", "replay"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=_cli_env(home),
        )
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    for proc, (_, err) in zip(procs, outs, strict=True):
        assert proc.returncode == 0, err
        assert "Traceback" not in err
    assert len(keys(db)) == 40 and list((home / "spool").glob("*.json")) == []


@pytest.fixture
def read_only_spool(tmp_path: Path) -> Iterator[Path]:
    """A real tmpfs, for the test to fill, then remount read-only (root only)."""
    with tmpfs(tmp_path / "ro-spool") as folder:
        yield folder


def test_a_read_only_spool_folder_is_replayed_and_what_stays_is_said(
    home: Path, tmp_path: Path, read_only_spool: Path
) -> None:
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    path = spool(make_run(hits(3, 4)), db, read_only_spool)
    read_only(read_only_spool)
    done = subprocess.run(
        [str(EXE), "db", "replay", "--spool-dir", str(read_only_spool)],
        capture_output=True,
        text=True,
        env=_cli_env(home),
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "saved 1 spooled run(s)" in done.stdout
    assert f"left in place: {path}" in done.stderr and "harmless" in done.stderr
    assert len(keys(db)) == 1

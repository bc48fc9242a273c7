"""A SQLite store in a folder nobody can write (a real tmpfs remounted read-only: chmod would not
stop root): ``history``, ``show``, ``drift`` and the dashboard read it, and a ``-wal`` whose
pages the file lacks is either read (its ``-shm`` is there) or refused naming the file and the
fix (exit 3), never read without its newest rows."""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli.replay_configs import CORPUS, EXAMPLES, LOG, invoke, write_config
from fastapi.testclient import TestClient
from helpers import read_only, tmpfs

from retrieval_eval.webui.app import create_app

SET, RETRIEVER, SAMPLE = "handbook.demo", "bm25", "top10"


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: Path) -> Path:
    return write_config(
        tmp_path,
        monkeypatch,
        {
            "store": f"sqlite:///{store}",
            "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
            "retrievers": {RETRIEVER: {"type": "lexical", "corpus": CORPUS}},
            "samples": {SAMPLE: {"source": {"path": LOG}, "method": "top", "size": 10}},
        },
    )


def _fill(config: Path) -> None:
    """One labelled run and two replays, through the real commands."""
    for args in (("run", SET, RETRIEVER), ("replay", SAMPLE, RETRIEVER)):
        done = invoke(config, *args)
        assert done.exit_code == 0, done.output
    assert invoke(config, "replay", SAMPLE, RETRIEVER).exit_code == 0


@pytest.fixture
def sealed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The config of a filled store whose folder was then remounted read-only."""
    with tmpfs(tmp_path / "ro") as folder:
        config = _config(tmp_path, monkeypatch, folder / "store.sqlite")
        _fill(config)
        assert sorted(p.name for p in folder.iterdir()) == ["store.sqlite"]  # WAL folded in
        read_only(folder)
        yield config


def test_read_commands_read_a_store_in_a_read_only_folder(sealed: Path) -> None:
    history = invoke(sealed, "runs", "list", SET, RETRIEVER, "--format", "json")
    assert history.exit_code == 0, history.output
    (run,) = json.loads(history.output)
    shown = invoke(sealed, "runs", "show", str(run["id"]), "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.output)["run_id"] == run["id"]
    drift = invoke(sealed, "drift", SAMPLE, RETRIEVER)
    assert drift.exit_code == 0, drift.output
    assert [line.split()[3] for line in drift.output.splitlines()] == ["no_drift", "first"]


def test_the_dashboard_reads_a_store_in_a_read_only_folder(sealed: Path) -> None:
    url = f"sqlite:///{sealed.parent / 'ro' / 'store.sqlite'}"
    app = create_app(url, require_auth=False)
    try:
        client = TestClient(app, raise_server_exceptions=False)
        for path in (
            f"/history?set={SET}&retriever={RETRIEVER}",
            f"/drift?sample={SAMPLE}&retriever={RETRIEVER}",
            "/replays/2",
        ):
            page = client.get(path)
            assert page.status_code == 200, (path, page.text[:300])
    finally:
        app.state.store_source.close()


@pytest.mark.parametrize("with_index", [True, False], ids=["wal+shm", "wal-only"])
def test_a_write_ahead_log_in_a_read_only_folder_is_read_or_refused_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, with_index: bool
) -> None:
    """A copy taken while a writer held the store open (a snapshot, a crashed writer): its
    newest replay lives only in the ``-wal``. Immutable mode would skip it silently."""
    work = tmp_path / "work" / "store.sqlite"
    _fill(_config(tmp_path, monkeypatch, work))
    holder = sqlite3.connect(work)  # an open reader keeps the -wal from being folded in
    try:
        holder.execute("PRAGMA wal_autocheckpoint=0")
        holder.execute("SELECT 1 FROM sqlite_master").fetchall()
        newest = invoke(_config(tmp_path, monkeypatch, work), "replay", SAMPLE, RETRIEVER)
        assert newest.exit_code == 0, newest.output
        with tmpfs(tmp_path / "ro") as folder:
            for suffix in ("", "-wal") + (("-shm",) if with_index else ()):
                shutil.copyfile(f"{work}{suffix}", f"{folder / 'store.sqlite'}{suffix}")
            assert (folder / "store.sqlite-wal").stat().st_size > 0
            read_only(folder)
            config = _config(tmp_path, monkeypatch, folder / "store.sqlite")
            drift = invoke(config, "drift", SAMPLE, RETRIEVER)
    finally:
        holder.close()
    if with_index:
        assert drift.exit_code == 0, drift.output
        assert len(drift.output.splitlines()) == 3  # the newest, only in the -wal, too
    else:
        assert drift.exit_code == 3
        wal = folder / "store.sqlite-wal"
        assert f"{wal} holds changes not yet in store.sqlite and its folder is read-only" in (
            drift.output
        )
        assert "open the store once where the folder is writable" in drift.output
        assert "Traceback" not in drift.output

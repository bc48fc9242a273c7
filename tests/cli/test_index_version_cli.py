"""``run --index-version`` and ``replay --index-version``: the index build measured is stored,
``history`` and ``drift`` name it ("index A vs B" when both runs have one); a bad value exits 2
before anything runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.replay_configs import CORPUS, EXAMPLES, LOG, invoke, write_config
from retrieval_eval import installed_version
from retrieval_eval.store import open_store


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    data = {
        "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
        "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {"bm25": {"type": "lexical", "corpus": CORPUS}},
        "samples": {"top10": {"source": {"path": LOG}, "method": "top", "size": 10}},
    }
    return write_config(tmp_path, monkeypatch, data)


def test_run_stores_the_index_version_and_history_names_both(config: Path) -> None:
    for version in ("2026-11-29.1", "2026-11-30.2"):
        done = invoke(config, "run", "handbook.demo", "bm25", "--index-version", version)
        assert done.exit_code == 0, done.output
    assert "(baseline run 1; index 2026-11-30.2 vs 2026-11-29.1)" in done.output
    plain = invoke(config, "run", "handbook.demo", "bm25")  # names no build
    assert plain.exit_code == 0, plain.output
    text = invoke(config, "runs", "list", "handbook.demo", "bm25")
    assert text.exit_code == 0, text.output
    rows = {line.split("│")[1].strip(): line for line in text.output.splitlines() if "│" in line}
    assert "index 2026-11-30.2 vs 2026-11-29.1" in rows["2"]
    assert "2026-11-29.1" in rows["1"] and " vs " not in rows["1"]  # the first: nothing before
    assert rows["3"].rstrip(" │").endswith("-")  # no version named, none shown
    listed = json.loads(
        invoke(config, "runs", "list", "handbook.demo", "bm25", "--format", "json").output
    )
    assert [(r["index_version"], r["baseline_index_version"]) for r in listed] == [
        (None, "2026-11-30.2"),
        ("2026-11-30.2", "2026-11-29.1"),
        ("2026-11-29.1", None),
    ]
    assert {r["package_version"] for r in listed} == {installed_version()}


def test_history_without_any_index_version_has_no_index_column(config: Path) -> None:
    assert invoke(config, "run", "handbook.demo", "bm25").exit_code == 0
    text = invoke(config, "runs", "list", "handbook.demo", "bm25").output
    assert "index" not in text.splitlines()[1]


@pytest.mark.parametrize(
    ("value", "said"), [("", "got 0 characters"), ("   ", "got 0"), ("x" * 201, "got 201")]
)
@pytest.mark.parametrize("command", ["run", "replay"])
def test_a_bad_index_version_exits_2_before_anything_runs(
    config: Path, tmp_path: Path, command: str, value: str, said: str
) -> None:
    args = ["handbook.demo", "bm25"] if command == "run" else ["top10", "bm25"]
    done = invoke(config, command, *args, "--index-version", value)
    assert done.exit_code == 2, done.output
    assert "--index-version" in done.output and "1 to 200 characters" in done.output
    assert said in done.output
    assert not (tmp_path / "store.sqlite").exists()  # nothing ran, nothing was created


def test_replay_stores_its_versions_and_drift_names_them(config: Path, tmp_path: Path) -> None:
    for version in ("2026-11-29.1", "2026-11-30.2"):
        done = invoke(config, "replay", "top10", "bm25", "--index-version", version)
        assert done.exit_code == 0, done.output
    assert "(index 2026-11-30.2 vs 2026-11-29.1)" in " ".join(done.output.split())  # wrapped
    drift = invoke(config, "drift", "top10", "bm25")
    assert "index 2026-11-30.2" in drift.output and "index 2026-11-29.1" in drift.output
    with open_store(f"sqlite:///{tmp_path / 'store.sqlite'}") as store:
        rows = store.replays.history("top10", "bm25")
    assert [r.index_version for r in rows] == ["2026-11-30.2", "2026-11-29.1"]
    assert {r.package_version for r in rows} == {installed_version()}

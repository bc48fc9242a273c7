"""``samples`` and ``replay`` on the demo corpus with BM25: the sample stored once, a replay of a
retriever against itself, a rebuilt index that drifts, privacy of the stored texts, exit codes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cli.replay_configs import CORPUS, LOG, invoke, write_config


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    corpus = CORPUS
    data: dict[str, Any] = {
        "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
        "retrievers": {
            "bm25": {"type": "lexical", "corpus": corpus, "chunk_size": 120, "chunk_overlap": 20},
            "bm25_flat": {"type": "lexical", "corpus": corpus, "k1": 0.3, "b": 0.1},
        },
        "samples": {
            "traffic": {
                "source": {"path": LOG},
                "casefold": True,
            },
            "top10": {
                "source": {"path": LOG},
                "method": "top",
                "size": 10,
                "casefold": True,
            },
        },
        "drift": {"min_mean_rbo": 0.95, "max_top1_changed": 0.2},
    }
    return write_config(tmp_path, monkeypatch, data)


def test_a_sample_is_drawn_once_and_shown_only_in_its_stored_form(config: Path) -> None:
    built = invoke(config, "samples", "build", "traffic")
    assert built.exit_code == 0, built.output
    assert "40 queries drawn" in built.output and "stored redacted" in built.output
    again = invoke(config, "samples", "build", "traffic")
    assert built.output == again.output  # the stored sample, not a new draw
    shown = invoke(config, "samples", "show", "traffic", "--limit", "50")
    assert "reset my password" in shown.output
    assert "jane.doe" not in shown.output and "<email>" in shown.output
    assert "555" not in shown.output and "<phone>" in shown.output


def test_replay_against_itself_then_a_rebuilt_index(config: Path) -> None:
    first = invoke(config, "replay", "top10", "bm25", "--format", "json")
    assert first.exit_code == 0, first.output
    doc = json.loads(first.output)
    assert doc["state"] == "first" and doc["queries"] == 10 and doc["errors"] == 0
    same = json.loads(invoke(config, "replay", "top10", "bm25", "--format", "json").output)
    assert same["state"] == "no_drift" and same["compared_replay_id"] == doc["replay_id"]
    assert same["overall"]["mean_rbo"] == pytest.approx(1.0)
    assert same["overall"]["top1_changed"] == 0
    other = invoke(config, "replay", "top10", "bm25", "--against", "bm25_flat", "--format", "json")
    moved = json.loads(other.output)
    assert moved["against"] == "retriever bm25_flat"
    assert moved["overall"]["mean_rbo"] < 1.0
    assert moved["most_changed"] and all(m["rbo"] < 1 for m in moved["most_changed"])
    history = invoke(config, "drift", "top10", "bm25")
    assert history.exit_code == 0 and history.output.count("top-1 changed") == 3


def test_drift_fails_the_command_only_when_asked(config: Path, tmp_path: Path) -> None:
    assert invoke(config, "replay", "top10", "bm25").exit_code == 0  # replay 1
    assert invoke(config, "replay", "traffic", "bm25").exit_code == 0  # replay 2, another sample
    mixed = invoke(config, "replay", "top10", "bm25", "--against-run", "2")
    assert mixed.exit_code == 2 and "never compared" in mixed.output
    loose = invoke(config, "replay", "top10", "bm25", "--against", "bm25_flat")
    assert loose.exit_code == 0 and "RANKING DRIFT" in loose.output
    draft = tmp_path / "draft.jsonl"
    strict = invoke(
        config,
        "replay",
        "top10",
        "bm25",
        "--against",
        "bm25_flat",
        "--fail-on-drift",
        "--export-draft",
        str(draft),
    )
    assert strict.exit_code == 1, strict.output
    rows = [json.loads(line) for line in draft.read_text().splitlines()]
    sample = invoke(config, "samples", "show", "top10").output
    assert rows and all(r["grade"] is None and r["document_id"] for r in rows)
    assert all(r["question"] in sample for r in rows)
    assert all(r["source"].startswith("replay ") for r in rows)


def test_unknown_names_are_usage_errors_before_any_work(config: Path) -> None:
    unknown = invoke(config, "replay", "trafic", "bm25")
    assert unknown.exit_code == 2 and "did you mean 'traffic'" in unknown.output
    both = invoke(config, "replay", "traffic", "bm25", "--against", "x", "--against-run", "1")
    assert both.exit_code == 2


def test_sets_pool_adds_a_stored_replays_queries_as_new_questions(config: Path) -> None:
    from retrieval_eval.labels.judgments import Judgment

    handbook = str(Path(__file__).resolve().parents[2] / "examples" / "golden" / "handbook.yaml")
    assert invoke(config, "replay", "top10", "bm25").exit_code == 0  # replay 1: the first
    assert invoke(config, "replay", "top10", "bm25").exit_code == 0  # replay 2: against 1
    base = ["sets", "pool", handbook, "--retrievers", "bm25", "--fresh", "--no-lint"]
    first = invoke(config, *base, "--replay", "1")
    assert first.exit_code == 2 and "compared with no stored replay" in first.output
    pooled = invoke(config, *base, "--replay", "2", "--limit", "3", "--no-texts")
    assert pooled.exit_code == 0, pooled.output
    rows = [Judgment.model_validate_json(line) for line in pooled.stdout.splitlines()]
    replayed = [r for r in rows if r.question_id is None]
    sample = invoke(config, "samples", "show", "top10").output
    assert replayed and len({r.question for r in replayed}) <= 3
    assert all(r.question and r.question in sample for r in replayed)
    assert all((r.source or "").startswith("replay 2 of top10 by bm25: before #") for r in replayed)


def test_an_against_replay_keeps_both_rankings_for_its_page_and_the_pool(
    config: Path, tmp_path: Path
) -> None:
    from fastapi.testclient import TestClient

    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.webui.app import create_app

    done = invoke(config, "replay", "top10", "bm25", "--against", "bm25_flat", "--format", "json")
    assert done.exit_code == 0, done.output
    doc = json.loads(done.stdout)
    text = invoke(config, "replay", "top10", "bm25", "--against", "bm25_flat", "--no-save")
    assert "before: retriever bm25_flat; after: retriever bm25" in text.output
    # the other retriever's rankings are a replay of its own series, the "before" of this one
    before_id, after_id = doc["compared_replay_id"], doc["replay_id"]
    assert before_id is not None and before_id != after_id
    (line,) = invoke(config, "drift", "top10", "bm25_flat").output.splitlines()
    assert line.split()[0] == str(before_id)
    printed = {m["key"]: m for m in doc["most_changed"]}
    app = create_app(f"sqlite:///{tmp_path / 'store.sqlite'}", require_auth=False)
    with TestClient(app) as client:
        page = client.get(f"/api/replays/{after_id}").json()
        overview = client.get("/api/overview").json()
        html = client.get("/replays/" + str(after_id)).text
    app.state.store_source.close()
    assert page["replay"]["against"] == "retriever bm25_flat"
    assert "retriever bm25_flat (before" in html
    shown = [q for q in page["queries"] if q["rbo"] is not None]
    assert shown and all(q["before"] for q in page["queries"])
    assert any(v is not None for q in shown for v in q["moves"].values())  # not all "new"
    by_text = {q["query"]: q for q in shown}
    for m in printed.values():  # the CLI's rankings and the page's are the same
        assert by_text[m["query"]]["before"] == m["before"]
        assert by_text[m["query"]]["after"] == m["after"]
    series = {(s["sample"], s["retriever"]): s for s in overview["replays"]}
    assert series[("top10", "bm25")]["against"] == "retriever bm25_flat"
    handbook = str(Path(__file__).resolve().parents[2] / "examples" / "golden" / "handbook.yaml")
    pooled = invoke(
        config, "sets", "pool", handbook, "--retrievers", "bm25", "--fresh", "--no-lint",
        "--replay", str(after_id), "--limit", "3", "--no-texts",
    )  # fmt: skip
    assert pooled.exit_code == 0, pooled.output
    rows = [Judgment.model_validate_json(line) for line in pooled.stdout.splitlines()]
    replayed = [r for r in rows if r.question_id is None]
    assert replayed and all(
        (r.source or "").startswith(f"replay {after_id} of top10 by bm25: ") for r in replayed
    )


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_report_stdout_cannot_take_says_the_replay_was_saved(config: Path) -> None:
    import subprocess
    import sys

    cli = str(Path(sys.executable).parent / "retrieval-eval")
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [cli, "replay", "top10", "bm25", "--config", str(config)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=120,
        )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "stdout: cannot write the report (No space left on device)" in done.stderr
    assert "the replay was saved: Saved as replay 1 in sqlite:///" in done.stderr
    assert "--replay 1` pools" in done.stderr
    history = invoke(config, "drift", "top10", "bm25")
    assert history.output.split()[0] == "1"  # it was indeed saved

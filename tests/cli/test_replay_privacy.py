"""A replay asks the retriever each query as it was captured, in ``redacted`` and ``hashed``
samples, on the first night and the next, by the CLI and by the DAG's steps; every sink (the
SQLite store's rows, the text, JSON and Markdown reports, the command's output and logs, a spool
file, a draft, the dashboard's pages) holds only the stored form.

The retriever is a real ``type: python`` one that appends every question it is asked to a file,
and fails one query with a message quoting it (as a backend's error would)."""

from __future__ import annotations

import json
import logging
import sqlite3
from collections import Counter
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from cli.replay_configs import invoke, write_config

RECORDER = """
import json


def make(record: str):
    def search(question: str, limit: int) -> list[str]:
        with open(record, "a", encoding="utf-8") as out:
            out.write(json.dumps(question) + "\\n")
        if "invoice" in question:
            raise RuntimeError(f"backend refused {question!r}")
        return [f"doc-{(sum(map(ord, question)) + i) % 97}" for i in range(limit)]

    return search
"""

CAPTURED = [  # as the log holds them (the first with doubled spaces: asked normalised)
    "Mail jane.doe@example.com  about my refund",
    "call me on +44 20 7946 0958",
    "customer 48213377 invoice missing",
    "order 11223344 refund",
    "order 55667788 refund",  # masks like the one before: still its own query
    "vpn setup",
]
ASKED = Counter(" ".join(text.split()) for text in CAPTURED)
PERSONAL = ("jane.doe", "example.com", "7946", "0958", "48213377", "11223344", "55667788")
DOWN = "postgresql://eval@127.0.0.1:1/results"  # nothing listens on port 1


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, privacy: str) -> Path:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "recorder_mod.py").write_text(RECORDER, encoding="utf-8")
    log = tmp_path / "log.jsonl"
    log.write_text(
        "".join(json.dumps({"query": t, "count": i + 1}) + "\n" for i, t in enumerate(CAPTURED))
    )
    sample: dict[str, object] = {"source": {"path": "log.jsonl"}, "privacy": privacy}
    if privacy == "hashed":
        monkeypatch.setenv("SAMPLE_KEY", "a key of thirty-two characters!!")
        sample["hash_key_from_env"] = "SAMPLE_KEY"
    return write_config(
        tmp_path,
        monkeypatch,
        {
            "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
            "retrievers": {
                "recorder": {
                    "type": "python",
                    "factory": "recorder_mod:make",
                    "options": {"record": str(tmp_path / "asked.jsonl")},
                    "paths": ["code"],
                }
            },
            "samples": {"log": sample},
            "drift": {"max_error_rate": 0.5},  # the refused query is one of six
        },
    )


def _asked(tmp_path: Path) -> Counter[str]:
    record = tmp_path / "asked.jsonl"
    return Counter(json.loads(line) for line in record.read_text().splitlines())


def _holds_none(where: str, text: str) -> None:
    found = [p for p in PERSONAL if p in text]
    assert not found, f"{where} holds {found}"


def _store_dump(tmp_path: Path) -> str:
    with sqlite3.connect(tmp_path / "store.sqlite") as connection:
        return "\n".join(connection.iterdump())


@pytest.mark.parametrize("privacy", ["redacted", "hashed"])
def test_the_cli_asks_the_captured_text_and_no_sink_holds_it(
    privacy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from retrieval_eval.webui.app import create_app

    config = _config(tmp_path, monkeypatch, privacy)
    outputs: dict[str, str] = {}
    caplog.set_level(logging.DEBUG)
    built = invoke(config, "samples", "build", "log")
    assert built.exit_code == 0 and f"{len(CAPTURED)} queries drawn" in built.output
    outputs["samples build"] = built.output
    outputs["samples show"] = invoke(config, "samples", "show", "log").output
    first = invoke(config, "replay", "log", "recorder", "--format", "markdown")
    assert first.exit_code == 0, first.output
    assert _asked(tmp_path) == ASKED  # night 1: every query as captured, each once
    outputs["night 1 (markdown)"] = first.output
    draft = tmp_path / "draft.jsonl"
    night2_args = ("replay", "log", "recorder", "--format", "json", "--export-draft", str(draft))
    second = invoke(config, *night2_args)
    outputs["night 2 (json)"] = second.output
    if privacy == "hashed":  # '#…' cannot be graded: refused, before anything is asked
        assert second.exit_code == 2 and "--draft-captured-text" in second.output
        second = invoke(config, *night2_args, "--draft-captured-text")  # the user's choice
        outputs["night 2 (json)"] = second.output
        drafted = {json.loads(line)["question"] for line in draft.read_text().splitlines()}
        assert drafted and drafted <= set(ASKED)  # as captured: gradable (not a sink checked)
    else:
        outputs["draft"] = draft.read_text()
        assert "<number>" in outputs["draft"]
    assert second.exit_code == 0, second.output
    night2 = json.loads(second.stdout)
    assert night2["compared_replay_id"] == 1 and night2["errors"] == 1
    assert _asked(tmp_path) == ASKED + ASKED  # night 2 asks the same texts again
    text = invoke(config, "replay", "log", "recorder", "--no-save")
    assert text.exit_code == 0, text.output
    outputs["text (not saved)"] = text.output
    spooled = invoke(config, "replay", "log", "recorder", "--db", DOWN)
    assert spooled.exit_code == 3, spooled.output
    outputs["spooled"] = spooled.output
    assert _asked(tmp_path) == Counter({t: 4 for t in ASKED})
    for path in (tmp_path / "home" / "spool").glob("replay-*.json"):
        outputs[f"spool file {path.name}"] = path.read_text()
    assert any(name.startswith("spool file") for name in outputs)
    outputs["store"] = _store_dump(tmp_path)
    app = create_app(f"sqlite:///{tmp_path / 'store.sqlite'}", require_auth=False)
    with TestClient(app) as client:
        for path in ("/", "/replays/2", "/api/replays/2", "/drift?sample=log&retriever=recorder"):
            page = client.get(path)
            assert page.status_code == 200, path
            outputs[f"page {path}"] = page.text
    app.state.store_source.close()
    outputs["logs"] = caplog.text
    for where, shown in outputs.items():
        _holds_none(where, shown)
    stored = "\n".join(q["query"] for q in night2["most_changed"]) + outputs["samples show"]
    if privacy == "redacted":
        assert "<email>" in stored and "<phone>" in outputs["samples show"]
        assert outputs["samples show"].count("order <number> refund") == 2
    else:
        assert "#" in outputs["samples show"] and "refund" not in outputs["samples show"]
    if privacy == "hashed":  # pooling its moved queries: refused, or as captured by choice
        handbook = str(Path(__file__).resolve().parents[2] / "examples/golden/handbook.yaml")
        pool = ["sets", "pool", handbook, "--retrievers", "recorder", "--fresh", "--no-lint"]
        pool += ["--no-texts", "--replay", "2"]
        refused = invoke(config, *pool)
        assert refused.exit_code == 2 and "--captured-text" in refused.output
        chosen = invoke(config, *pool, "--captured-text")
        assert chosen.exit_code == 0, chosen.output
        rows = [json.loads(line) for line in chosen.stdout.splitlines()]
        drafted = {r["question"] for r in rows if r["question_id"] is None}
        assert drafted and drafted <= set(ASKED) - {"customer 48213377 invoice missing"}
    # the failed query is explained, masked, in every form
    (reason,) = night2["error_reasons"]
    assert reason["reason"] == "this replay: RuntimeError" and reason["count"] == 1
    masked = "customer <number> invoice missing" if privacy == "redacted" else "#"
    assert "backend refused" in reason["example"] and masked in reason["example"]
    for where in ("night 1 (markdown)", "text (not saved)", "page /replays/2"):
        assert "RuntimeError" in outputs[where] and "backend refused" in outputs[where], where
    assert "Saved as replay 1 in" in outputs["night 1 (markdown)"]
    assert "--replay 1` pools" in outputs["night 1 (markdown)"]


@pytest.mark.parametrize("privacy", ["redacted", "hashed"])
def test_the_dag_steps_ask_the_captured_text_on_two_nights(
    privacy: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from retrieval_eval.workflows.replay import Replay, ReplayJob, ReplayPart

    config = str(_config(tmp_path, monkeypatch, privacy))
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    states = []
    for night in (1, 2):
        # as the DAG's tasks run the steps: a workflow rebuilt from the job in each task
        job = ReplayJob(
            config_path=config, sample="log", retriever="recorder", store_url=url,
            run_key=f"night-{night}", max_batches=2,
        )  # fmt: skip
        planned = Replay(job).plan(2)
        batches = [Replay(job).execute(b).model_dump_json() for b in planned]
        for batch in batches:
            _holds_none("an XCom", batch)
        flow = Replay(job)
        saved = flow.record(flow.reduce([ReplayPart.model_validate_json(b) for b in batches]))
        _holds_none("the saved replay", saved.model_dump_json())
        states.append(saved.comparison.state)
        (why,) = saved.comparison.error_reasons()  # for the alert and the failed task's message
        assert why["count"] == 1 and why["reason"].endswith("RuntimeError")
        assert _asked(tmp_path) == Counter({t: night for t in ASKED})
    assert states == ["first", "no_drift"]
    _holds_none("the task output", capsys.readouterr().out)
    _holds_none("the store", _store_dump(tmp_path))


def test_a_sample_whose_log_rotated_stops_the_replay_and_says_how_to_go_on(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = _config(tmp_path, monkeypatch, "redacted")
    assert invoke(config, "replay", "log", "recorder").exit_code == 0
    log = tmp_path / "log.jsonl"
    log.write_text("".join(line + "\n" for line in log.read_text().splitlines()[1:]))  # rotated
    stopped = invoke(config, "replay", "log", "recorder")
    assert stopped.exit_code == 2
    assert "1 of 6 queries are no longer in its log" in stopped.output
    assert "samples build log --refresh" in stopped.output
    assert _asked(tmp_path) == ASKED  # nothing asked the second time, masked or not
    _holds_none("the message", stopped.output)
    assert invoke(config, "samples", "build", "log", "--refresh").exit_code == 0
    again = invoke(config, "replay", "log", "recorder", "--format", "json")
    assert again.exit_code == 0 and json.loads(again.stdout)["queries"] == 5

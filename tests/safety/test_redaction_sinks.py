"""Captured queries holding secrets and personal data (the scanners' published examples, see
``scanner_examples``) reach no sink raw: not the stored sample or replay rows, the text, JSON or
Markdown report, ``samples show``, the spool file of a replay whose store is down, the draft of
candidates to judge, the dashboard's replay page and its JSON, nor a log line or stderr.

One policy does it (``redact_personal``, as the sample is drawn): every sink shows the stored
text. Through the real commands on the demo corpus, with a log of the demo's queries plus the
leaky ones, cased as typed (a case-folded sample is masked before it is folded)."""

from __future__ import annotations

import json
import logging
import sqlite3
from pathlib import Path

import pytest
from cli.replay_configs import CORPUS, LOG, invoke, write_config
from fastapi.testclient import TestClient
from safety import scanner_examples as ex

from retrieval_eval.webui.app import create_app

DOWN = "postgresql://eval:Secr3t-pw-9@127.0.0.1:1/results"  # nothing listens on port 1
# (query as typed, what must never be shown)
LEAKY = [
    (f"login fails with token {ex.JWT_1}", ex.JWT_1),
    (f"Bearer {ex.JWT_BEARER} rejected", ex.JWT_BEARER),
    ("why is AKIALALEMEL33243OLIB denied", "AKIALALEMEL33243OLIB"),
    (f"aws_secret_access_key = {ex.AWS_SECRET} not working", ex.AWS_SECRET),
    ("charge failed sk_live_ReTllpYQYfIZu2Jnf2lAPFjD", "ReTllpYQYfIZu2Jnf2lAPFjD"),
    ("restricted rk_live_5TcWfjKmJgpql9hjpRnwRXbT key", "5TcWfjKmJgpql9hjpRnwRXbT"),
    (
        "sync 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 to notes",
        "wWPw5k4aXcaT4fNP0UcnZwJUVFk6LO0pINUx",
    ),
    ("slack xoxb-34532454-e039d02840a0b9379c integration", "e039d02840a0b9379c"),
    ("blocked from 133.133.133.133 today", "133.133.133.133"),
    ("sync from 2001:DB8::8:800:200C:417A fails", "200C:417A"),
    ("vpn fe80::1%eth0 offline", "fe80::1"),
    ("refund to DE89 3704 0044 0532 0130 00 please", "DE89"),
    ("pay GB29 NWBK 6016 1331 9268 19", "GB29"),
]
SHOWN = [secret for _, secret in LEAKY]


def _config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, casefold: bool) -> Path:
    log = tmp_path / "queries.jsonl"
    rows = [json.dumps({"query": q, "count": 5}) for q, _ in LEAKY]
    log.write_text("\n".join(rows) + "\n" + Path(LOG).read_text())
    return write_config(
        tmp_path,
        monkeypatch,
        {
            "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
            "retrievers": {
                "bm25": {"type": "lexical", "corpus": CORPUS},
                "bm25_flat": {"type": "lexical", "corpus": CORPUS, "k1": 0.3, "b": 0.1},
            },
            "samples": {"log": {"source": {"path": str(log)}, "casefold": casefold}},
        },
    )


def _leaks(where: str, text: str) -> list[str]:
    folded = text.casefold()
    return [f"{where}: {secret}" for secret in SHOWN if secret.casefold() in folded]


@pytest.mark.parametrize("casefold", [False, True], ids=["as-typed", "casefolded"])
def test_no_captured_secret_reaches_any_sink(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    casefold: bool,
) -> None:
    caplog.set_level(logging.DEBUG)
    config = _config(tmp_path, monkeypatch, casefold)
    draft = tmp_path / "draft.jsonl"
    outputs: dict[str, str] = {}
    built = invoke(config, "samples", "build", "log")
    assert built.exit_code == 0, built.output
    outputs["samples build"] = built.output
    outputs["samples show"] = invoke(config, "samples", "show", "log", "--limit", "500").output
    for fmt in ("text", "json", "markdown"):
        extra = ["--export-draft", str(draft)] if fmt == "markdown" else []
        done = invoke(
            config, "replay", "log", "bm25", "--against", "bm25_flat", "--limit", "500",
            "--format", fmt, *extra,
        )  # fmt: skip
        assert done.exit_code == 0, done.output
        outputs[f"report {fmt}"] = done.output
    replay_id = json.loads(outputs["report json"])["replay_id"]
    outputs["draft"] = draft.read_text()
    assert "<iban>" in outputs["draft"] + outputs["report text"]  # the leaky queries are there
    down = invoke(config, "replay", "log", "bm25", "--db", DOWN)
    assert down.exit_code == 3, down.output
    outputs["spooled replay's report"] = down.output
    (spooled,) = (tmp_path / "home" / "spool").glob("replay-*.json")
    outputs["spool"] = spooled.read_text()
    assert "<ip>" in outputs["spool"]
    with sqlite3.connect(tmp_path / "store.sqlite") as conn:
        outputs["store"] = "\n".join(conn.iterdump())
    app = create_app(f"sqlite:///{tmp_path / 'store.sqlite'}", require_auth=False)
    try:
        client = TestClient(app)
        for path in (f"/replays/{replay_id}", f"/api/replays/{replay_id}"):
            page = client.get(path, params={"page": 1})
            assert page.status_code == 200
            outputs[path] = page.text
    finally:
        app.state.store_source.close()
    outputs["logs"] = "\n".join(r.getMessage() for r in caplog.records)
    leaks = [leak for where, text in outputs.items() for leak in _leaks(where, text)]
    assert not leaks, leaks

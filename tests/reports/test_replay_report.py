"""A replay's report shows stored query texts as data: no rich markup, no Markdown."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from retrieval_eval.config.models import load_config
from retrieval_eval.reports.replay import render_replay
from retrieval_eval.workflows.replay import run_replay

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "[bold red]refund[/bold red] *policy* <b>|x|</b>"


def test_query_texts_are_shown_not_rendered(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(
        json.dumps({"query": HOSTILE, "count": 5}) + "\n" + json.dumps({"query": "vpn"}) + "\n"
    )
    corpus = str(ROOT / "examples" / "corpus")
    (tmp_path / "c.yaml").write_text(
        yaml.safe_dump(
            {
                "retrievers": {
                    "a": {"type": "lexical", "corpus": corpus},
                    "b": {"type": "lexical", "corpus": corpus, "k1": 0.2, "b": 0.0},
                },
                "samples": {"s": {"source": {"path": str(log)}, "privacy": "plain"}},
                "drift": {"min_mean_rbo": 1.0},
            }
        )
    )
    outcome = run_replay(load_config(tmp_path / "c.yaml"), None, "s", "a", against="b")
    text = render_replay(outcome, "text")
    assert "[bold red]refund[/bold red]" in text
    doc = json.loads(render_replay(outcome, "json"))
    assert HOSTILE in {m["query"] for m in doc["most_changed"]}
    markdown = render_replay(outcome, "markdown")
    assert "<b>" not in markdown

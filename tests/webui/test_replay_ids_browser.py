"""The replay page at desktop width (1280 px) in headless Chromium keeps every document id on one
line: 8-digit ids (as BEIR corpora number their documents) are never broken mid-number."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from retrieval_eval.config.models import load_config
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.replay import run_replay
from webui.browsing import serve

ROOT = Path(__file__).resolve().parents[2]
FIRST_ID = 10_000_019  # 8 digits, as SciFact's document ids

# each shown id: how many lines its text takes, measured on the laid-out page
LINES_PER_ID = """() => Array.from(document.querySelectorAll('ol.ids li')).map(li => {
  const range = document.createRange();
  range.selectNodeContents(li.querySelector('.id') || li.firstChild);
  const tops = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
  return [range.toString().trim(), tops.size];
})"""


def _corpus(folder: Path, keep: int) -> Path:
    """The demo handbook as a BEIR corpus.jsonl with 8-digit ids, its first ``keep`` pages."""
    pages = sorted(p for p in (ROOT / "examples" / "corpus").rglob("*.md"))[:keep]
    path = folder / f"corpus-{keep}.jsonl"
    path.write_text(
        "".join(
            json.dumps({"_id": str(FIRST_ID + 7919 * i), "title": "", "text": page.read_text()})
            + "\n"
            for i, page in enumerate(pages)
        )
    )
    return path


def _long_queries(folder: Path) -> Path:
    """The demo query log, each query followed by the next two: the long queries of a chat
    assistant, whose column takes the page's width from the ranking columns."""
    lines = (ROOT / "examples" / "logs" / "queries.jsonl").read_text().splitlines()
    texts = list(dict.fromkeys(json.loads(line)["query"].strip() for line in lines))
    path = folder / "queries.jsonl"
    path.write_text(
        "".join(
            json.dumps({"query": " and ".join(texts[i : i + 3]), "count": 1 + i}) + "\n"
            for i in range(len(texts))
        )
    )
    return path


@pytest.mark.browser
def test_eight_digit_ids_stay_whole_on_the_replay_page_at_1280_px(
    browser: Any, tmp_path: Path
) -> None:
    every = len(list((ROOT / "examples" / "corpus").rglob("*.md")))
    url = f"sqlite:///{tmp_path / 'store.sqlite'}"
    log = _long_queries(tmp_path)
    replay_id = 0
    for version, keep in (("v1", every), ("v2", every * 2 // 3)):  # a third of the pages gone
        config = tmp_path / f"{version}.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "retrievers": {
                        "bm25": {"type": "lexical", "corpus": str(_corpus(tmp_path, keep))}
                    },
                    "samples": {"log": {"source": {"path": str(log)}}},
                }
            )
        )
        with open_store(url) as store:
            replay_id = run_replay(load_config(config), store, "log", "bm25").replay_id
    app = create_app(url, require_auth=False)
    for base in serve(app):
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        assert page.goto(f"{base}/replays/{replay_id}").status == 200
        measured = page.evaluate(LINES_PER_ID)
        assert len(measured) >= 20  # both rankings of the most-moved queries
        assert [d for d, _ in measured if not (len(d) == 8 and d.isdigit())] == []
        broken = [doc for doc, lines in measured if lines != 1]
        assert not broken, f"ids broken across lines at 1280 px: {broken}"
        scroll = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
        assert scroll[0] <= scroll[1]  # and the page does not scroll sideways for it
        page.close()
    app.state.store_source.close()

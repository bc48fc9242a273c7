"""The run page at 1280 px in real headless Chromium: columns fit their content, ids never
break inside a word, and a regression's flipped questions are listed once, then the rest.

The store holds real runs of the demo (``fill.py``): its ids are paths such as
``billing/refunds-eu.md`` and ``api/rate-limits-legacy-v1.md``. Before, the Expected column got
~100 px and broke ids anywhere (``billing/r|efunds-|eu.md``) while an empty Error column took
~220 px, and the same flipped rows were drawn in four tables and again in the list. One
Chromium serves the module.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from webui.browsing import launched_chromium, serve
from webui.busy import Busy
from webui.fill import Filled

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 1280, 800

# every id drawn in the questions table, and where each of its lines ends: a line may end only
# after "/" or "-" (a break inside a word would end it elsewhere)
_ID_LINES = """
() => [...document.querySelectorAll(
    'table.questions .ids .id, table.questions .ids .hit, table.questions .ids .exp > :first-child')]
  .map(el => {
    const text = el.textContent, lines = [];
    let top = null, current = '';
    const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (let i = 0; i < node.length; i++) {
        const range = document.createRange();
        range.setStart(node, i);
        range.setEnd(node, i + 1);
        const rect = range.getClientRects()[0];
        if (!rect) continue;
        if (top !== null && Math.abs(rect.top - top) > 2) { lines.push(current); current = ''; }
        top = rect.top;
        current += node.data[i];
      }
    }
    lines.push(current);
    return [text, lines];
  })
"""
_LAYOUT = """
() => ({
  scroll: [document.scrollingElement.scrollWidth, innerWidth],
  headers: [...document.querySelectorAll('table.questions thead th')].map(th =>
    [th.textContent.trim(), th.getBoundingClientRect().width]),
  rows: [...document.querySelectorAll('table.questions tbody tr')].map(tr =>
    [tr.dataset.questionId, tr.dataset.flips || '']),
  height: document.scrollingElement.scrollHeight,
})
"""


@pytest.fixture(scope="module")
def page(filled_sqlite: Filled) -> Iterator[Any]:
    app = create_app(filled_sqlite.url, require_auth=False)
    with launched_chromium() as browser:
        for base in serve(app):
            context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
            tab = context.new_page()
            run_id = filled_sqlite.regression_ids[0]
            assert tab.goto(f"{base}/runs/{run_id}").status == 200
            yield tab
            context.close()
    app.state.store_source.close()


def test_ids_never_break_inside_a_word_and_short_ones_stay_whole(page: Any) -> None:
    drawn = page.evaluate(_ID_LINES)
    assert len(drawn) > 100  # the retrieved and expected ids of the page's 46 questions
    broken = [
        (text, lines)
        for text, lines in drawn
        if any(not line.rstrip(", ").endswith(("/", "-")) for line in lines[:-1])
        or (len(lines) > 1 and len(text.rstrip(",")) <= 24)
    ]
    assert broken == [], broken[:5]
    assert any(len(lines) > 1 for _, lines in drawn)  # the long ids do break, where they may


def test_the_columns_fit_at_1280_px_without_an_empty_error_column(
    page: Any, tmp_path: Path
) -> None:
    layout = page.evaluate(_LAYOUT)
    page.screenshot(path=str(tmp_path / "run-1280.png"), full_page=True)
    assert layout["scroll"][0] <= layout["scroll"][1], f"sideways scroll: {layout['scroll']}"
    widths = dict(layout["headers"])
    assert "Error" not in widths  # no question of the page errored
    # the widest expected id of up to 24 characters fits on one line (checked above), and
    # the Expected column is no narrower than the Retrieved one beside it
    assert widths["Expected"] >= 0.8 * widths["Retrieved (hits in bold)"], widths


def test_flipped_questions_are_listed_once_then_the_rest(page: Any, filled_sqlite: Filled) -> None:
    with open_store(filled_sqlite.url) as store:
        verdict = store.get_run(filled_sqlite.regression_ids[0]).verdict
    assert verdict is not None
    flipped = {
        *verdict.flipped_to_miss,
        *verdict.flipped_to_hit,
        *verdict.top3_flipped_to_miss,
        *verdict.top3_flipped_to_hit,
    }
    rows = page.evaluate(_LAYOUT)["rows"]
    ids = [qid for qid, _ in rows]
    assert len(ids) == len(set(ids)) == 46  # every question once
    marked = [qid for qid, flips in rows if flips]
    assert set(marked) == flipped and ids[: len(marked)] == marked  # the flips first
    assert page.locator("table.flips").count() == 0  # no second copy of them above
    counts = page.locator("#flips li").all_inner_texts()
    assert counts[0] == f"top-1 hit → miss: {len(verdict.flipped_to_miss)}"


def test_a_page_whose_questions_errored_has_its_error_column(busy_sqlite: Busy) -> None:
    app = create_app(busy_sqlite.url, require_auth=False)
    with TestClient(app) as client:
        errored = client.get(f"/runs/{busy_sqlite.invalid}", params={"show": "errors"}).text
        clean = client.get(f"/runs/{busy_sqlite.invalid}", params={"show": "hits"}).text
    app.state.store_source.close()
    assert "<th>Error</th>" in errored and '<td data-label="Error"' in errored
    assert "<th>Error</th>" not in clean

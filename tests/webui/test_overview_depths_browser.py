"""The overview in real headless Chromium at desktop width (1280×800) with a pair gating four
depths ``[1, 3, 5, 10]`` beside one gating the seed's ``[1, 3]``: every depth's rate and Δ column
is drawn, nothing forces sideways scrolling, and no rate breaks over two lines."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from store.builders import ranked_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import record_run
from webui.browsing import serve

pytestmark = pytest.mark.browser

DEPTHS = [1, 3, 5, 10]
BEFORE = {"a0": 1, "b0": 2, "c0": 4, "c1": 5, "d0": 8, "d1": 10, "n0": None}
AFTER = {**BEFORE, "d0": 20, "d1": 20}  # lost at top-10 only


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    url = f"sqlite:///{tmp_path_factory.mktemp('overview_depths') / 'results.sqlite'}"
    thresholds = Thresholds()
    record_run(ranked_run(BEFORE, DEPTHS), store_url=url, thresholds=thresholds)
    record_run(ranked_run(AFTER, DEPTHS, day=1), store_url=url, thresholds=thresholds)
    record_run(ranked_run(BEFORE, [1, 3], retriever="dense"), store_url=url, thresholds=thresholds)
    app = create_app(url, require_auth=False)
    yield from serve(app)
    app.state.store_source.close()


_LAYOUT = """
() => {
  const table = document.querySelector('table.overview');
  // how tall a cell's text is, in lines (a cell is as tall as its row: measure its text)
  const line = parseFloat(getComputedStyle(table).lineHeight);
  const lines = cell => {
    const range = document.createRange();
    range.selectNodeContents(cell);
    return range.getBoundingClientRect().height / line;
  };
  const cells = [...table.querySelectorAll('td.num')];
  return {
    page: [document.documentElement.scrollWidth, window.innerWidth],
    table: [table.parentElement.scrollWidth, table.parentElement.clientWidth],
    // a rate over its interval is two lines; more is a figure broken in two
    wrapped: cells.filter(c => lines(c) > 2.2).map(c => c.innerText),
    rates_stacked: [...table.querySelectorAll('td.top10 .ci')].every(
      ci => ci.getBoundingClientRect().top > ci.parentElement.getBoundingClientRect().top + 5),
  };
}
"""


def test_the_overview_draws_four_depths_at_desktop_width(served: str, browser: Any) -> None:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    assert page.goto(served + "/").status == 200
    heads = [" ".join(h.split()) for h in page.locator("table.overview thead th").all_inner_texts()]
    assert [h for h in heads if h.startswith("Top-")] == [f"Top-{d} [95% CI]" for d in DEPTHS]
    assert [h for h in heads if h.startswith("Δ")] == [f"Δ top-{d}" for d in DEPTHS]
    row = page.locator('tr[data-retriever="bm25"]')
    assert row.locator("td.top10").inner_text().startswith("57.1%")  # 4 of 7 within rank 10
    assert row.locator("td.delta-top10").inner_text() == "-28.6 pts"
    assert page.locator('tr[data-retriever="dense"] td.top10').inner_text() == "–"
    assert row.locator("td.top10").is_visible()
    layout = page.evaluate(_LAYOUT)
    if (folder := os.environ.get("RETRIEVAL_EVAL_SCREENSHOTS")) and Path(folder).is_dir():
        page.screenshot(path=str(Path(folder) / "overview-depths-desktop.png"), full_page=True)
    assert layout["page"][0] <= layout["page"][1], layout
    assert layout["table"][0] <= layout["table"][1], layout  # the table fits: no inner scroll
    assert layout["wrapped"] == [] and layout["rates_stacked"], layout
    page.close()

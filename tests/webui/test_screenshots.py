"""Every dashboard page in real headless Chromium at desktop (1280×800) and phone (390×844) widths.

Each page is loaded from uvicorn over HTTP with ``busy.py``'s store (long runs, a regression that
became the accepted baseline, an invalid run, two runs in the same minute) and checked for what a
reader would see wrong in a screenshot:

- nothing forces sideways scrolling (``scrollWidth <= innerWidth``);
- the page's key elements are visible (headline figures, the table, the filters, page links);
- every visible chart has its legend, its ticks never repeat, its text is not shrunk below
  reading size, and nothing covers it (``elementFromPoint`` over a grid of its points returns the
  chart itself);
- the screenshot is not blank (drawn in a canvas: many colours, no single one nearly everywhere).

The PNGs are kept under the test's tmp dir, and also written to ``$RETRIEVAL_EVAL_SCREENSHOTS``
when that names a directory, for a human to look at. Browser plumbing is ``browsing.py``'s.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.webui.app import create_app
from webui.browsing import serve
from webui.busy import BM25, SET, Busy

pytestmark = pytest.mark.browser

VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}
MIN_FONT_PX = 8.5  # chart text rendered smaller than this is unreadable


@dataclass(frozen=True)
class Shot:
    name: str
    path: str  # ``{regression}`` stands for that run's id
    visible: tuple[str, ...]  # selectors that must be visible (the first match of each)
    charts: int = 0  # visible line charts expected


HISTORY = f"/history?set={SET}&retriever={BM25}"
SHOTS = [
    Shot("overview", "/", ("h1", "table.overview", "svg.spark", "#spark-legend")),
    Shot("history", HISTORY, ("h1", "#latest-top1", "table.runs"), charts=2),
    Shot("history-by-form", HISTORY + "&dim=form", ("h1", "table.runs"), charts=3),
    Shot(
        "run",
        "/runs/{regression}",
        ("h1", "#top1", "form.filters", "nav.pager", "table.questions .ids .missing"),
    ),
    Shot(
        "run-filtered",
        "/runs/{regression}?show=all&form=match&page=2",
        ("h1", "form.filters", "nav.pager", "table.questions"),
    ),
]


@pytest.fixture(scope="module")
def served_busy(busy_sqlite: Busy) -> Iterator[str]:
    app = create_app(busy_sqlite.url, require_auth=False)  # auth is test_browser's business
    yield from serve(app)
    app.state.store_source.close()


_CHART_CHECKS = """
() => [...document.querySelectorAll('svg.chart, svg.chart-narrow')]
  .filter(svg => getComputedStyle(svg).display !== 'none')
  .map(svg => {
    svg.scrollIntoView({block: 'center'});
    const box = svg.getBoundingClientRect();
    const covered = [];
    for (const fx of [0.05, 0.3, 0.5, 0.7, 0.95]) {
      for (const fy of [0.05, 0.3, 0.5, 0.7, 0.95]) {
        const x = box.left + box.width * fx, y = box.top + box.height * fy;
        const hit = document.elementFromPoint(x, y);
        if (!hit || !(hit === svg || svg.contains(hit))) covered.push([fx, fy, hit && hit.tagName]);
      }
    }
    const legend = svg.querySelector('g.legend');
    const legendBox = legend ? legend.getBoundingClientRect() : null;
    return {
      title: svg.getAttribute('aria-label'),
      width: box.width,
      scale: box.width / svg.viewBox.baseVal.width,
      covered,
      legendEntries: svg.querySelectorAll('g.legend-entry').length,
      legendKinds: [...svg.querySelectorAll('g.legend-entry')].map(g => g.dataset.kind),
      legendInside: !!legendBox && legendBox.right <= box.right + 1 && legendBox.bottom <= box.bottom + 1,
      ticks: [...svg.querySelectorAll('text.tick')].map(t => t.textContent),
    };
  })
"""

_BLANKNESS = """
async (data) => {
  const image = new Image();
  image.src = 'data:image/png;base64,' + data;
  await image.decode();
  const canvas = document.createElement('canvas');
  canvas.width = image.width; canvas.height = image.height;
  const context = canvas.getContext('2d');
  context.drawImage(image, 0, 0);
  const pixels = context.getImageData(0, 0, image.width, image.height).data;
  const counts = new Map();
  for (let i = 0; i < pixels.length; i += 4 * 7) {  // every 7th pixel is plenty
    const key = (pixels[i] << 16) | (pixels[i + 1] << 8) | pixels[i + 2];
    counts.set(key, (counts.get(key) || 0) + 1);
  }
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  return {colours: counts.size, commonest: Math.max(...counts.values()) / total};
}
"""


def _save(png: bytes, name: str, tmp_path: Path) -> None:
    (tmp_path / name).write_bytes(png)
    wanted = os.environ.get("RETRIEVAL_EVAL_SCREENSHOTS")
    if wanted:
        Path(wanted).mkdir(parents=True, exist_ok=True)
        (Path(wanted) / name).write_bytes(png)


def _blankness(browser: Any, png: bytes) -> dict[str, float]:
    page = browser.new_page()
    try:
        page.set_content("<html><body></body></html>")
        return dict(page.evaluate(_BLANKNESS, base64.b64encode(png).decode()))
    finally:
        page.close()


@pytest.mark.parametrize("viewport", list(VIEWPORTS))
@pytest.mark.parametrize("shot", SHOTS, ids=lambda shot: shot.name)
def test_page_reads_well_in_a_screenshot(
    served_busy: str, browser: Any, busy_sqlite: Busy, shot: Shot, viewport: str, tmp_path: Path
) -> None:
    width, height = VIEWPORTS[viewport]
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        response = page.goto(served_busy + shot.path.format(regression=busy_sqlite.regression))
        assert response.status == 200
        scroll = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
        assert scroll[0] <= scroll[1], f"{shot.name} scrolls sideways at {viewport}: {scroll}"
        for selector in shot.visible:
            assert page.locator(selector).first.is_visible(), f"{selector} hidden at {viewport}"
        charts = page.evaluate(_CHART_CHECKS)
        assert len(charts) == shot.charts, [c["title"] for c in charts]
        for chart in charts:
            where = f"{shot.name} at {viewport}: {chart['title']}"
            assert chart["covered"] == [], f"{where}: something covers the chart"
            assert chart["legendEntries"] >= 2 and chart["legendInside"], where
            assert 12 * chart["scale"] >= MIN_FONT_PX, f"{where}: text shrunk to unreadable"
            assert len(chart["ticks"]) >= 2 and len(set(chart["ticks"])) == len(chart["ticks"])
            assert all(tick.startswith("#") for tick in chart["ticks"]), chart["ticks"]
            # this pair's history has a regression, an accepted baseline and an invalid run
            assert {"regression", "baseline", "invalid"} <= set(chart["legendKinds"]), where
        page.evaluate("() => window.scrollTo(0, 0)")
        png = page.screenshot(full_page=True)
        _save(png, f"{shot.name}-{viewport}.png", tmp_path)
        seen = _blankness(browser, png)
        assert seen["colours"] >= 16 and seen["commonest"] < 0.97, seen
    finally:
        context.close()


def test_a_blank_page_fails_the_blankness_check(browser: Any) -> None:
    """The non-blank check above can fail: a white page does."""
    page = browser.new_page(viewport={"width": 390, "height": 844})
    page.set_content("<html><body style='background:#fff'></body></html>")
    seen = _blankness(browser, page.screenshot())
    page.close()
    assert seen["colours"] < 16 or seen["commonest"] >= 0.97

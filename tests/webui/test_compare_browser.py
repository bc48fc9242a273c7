"""The compare page in headless Chromium at desktop and phone widths: the leaderboard, the
chooser form driving it, and a phone layout without sideways scrolling. Screenshots go to
``test-artifacts/``.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.webui.app import create_app
from webui.browsing import serve
from webui.test_compare_page import HAND, save_board

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture
def served(tmp_path: Path) -> Iterator[str]:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    save_board(url)
    app = create_app(url, require_auth=False)
    yield from serve(app)
    app.state.store_source.close()


def _rows(page: Any) -> list[str]:
    rows = page.locator("table.leaderboard tbody tr")
    return [rows.nth(i).get_attribute("data-retriever") for i in range(rows.count())]


def test_the_chooser_drives_the_board_on_a_desktop(served: str, browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    assert page.goto(f"{served}/compare?set={HAND}").status == 200
    assert _rows(page) == ["best", "middle", "worst"]
    marked = page.locator('table.leaderboard tr[data-retriever="worst"] td.marker')
    assert marked.inner_text() == "*"
    assert page.locator("table.differences tbody tr").count() == 8
    page.screenshot(path=str(ARTIFACTS / "dashboard-compare.png"), full_page=True)
    # leave "worst" out and make "middle" the reference: the form sends r=..&reference=..
    page.locator('input[name="r"][value="worst"]').uncheck()
    page.select_option('select[name="reference"]', "middle")
    page.get_by_role("button", name="Compare").click()
    page.wait_for_load_state()
    assert _rows(page) == ["best", "middle"]
    assert "(reference)" in page.locator('tr[data-retriever="middle"]').inner_text()
    assert "reference=middle" in page.url and "worst" not in page.url


def test_the_board_fits_a_phone(served: str, browser: Any) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 390, "height": 900})
    page.goto(f"{served}/compare?set={HAND}")
    thead = page.locator("table.leaderboard thead")
    assert thead.evaluate("e => getComputedStyle(e).display") == "none"  # one card per row
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 390
    page.screenshot(path=str(ARTIFACTS / "dashboard-compare-phone.png"), full_page=True)

"""A real browser: headless Chromium opens the dashboard served by uvicorn on 127.0.0.1.

Skips with a reason where Debian's ``chromium`` is absent, and fails instead when
``RETRIEVAL_EVAL_REQUIRE_BROWSER=1`` (set by ``.ci/run``); see ``browsing.py`` and the ``browser``
fixture in ``conftest.py``. Screenshots go to ``test-artifacts/``.
The browser signs in the way the Airflow UI does: a ``_token`` cookie holding an Airflow JWT.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from webui.browsing import serve
from webui.fill import BM25, MARKUP, SET, Filled

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"


def _with_interval(rate: str, hits: int, count: int) -> str:
    low, high = wilson(hits, count) or (0.0, 0.0)
    return f"{rate} [{low * 100:.1f}%, {high * 100:.1f}%]"


@pytest.fixture
def served(filled_sqlite: Filled) -> Iterator[str]:
    """The dashboard alone (auth required) behind uvicorn on a free local port, in a thread."""
    app = create_app(filled_sqlite.url)
    yield from serve(app)
    app.state.store_source.close()


@pytest.fixture
def airflow_served(
    filled_sqlite: Filled, mint_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    """Airflow's whole API server app (UI included), the plugin loaded by its entry point."""
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", filled_sqlite.url)
    from airflow.api_fastapi.app import create_app as airflow_app

    from retrieval_eval.webui.plugin import RetrievalEvalPlugin

    yield from serve(airflow_app())
    RetrievalEvalPlugin.fastapi_apps[0]["app"].state.store_source.close()


def _signed_in(browser: Any, base: str, token: str, width: int = 1280) -> Any:
    context = browser.new_context(viewport={"width": width, "height": 900})
    context.add_cookies([{"name": "_token", "value": token, "url": base}])
    page = context.new_page()
    page.dialogs = []
    page.on("dialog", lambda dialog: (page.dialogs.append(dialog.message), dialog.dismiss()))
    return page


def test_overview_and_history_in_headless_chromium(
    served: str, browser: Any, filled_sqlite: Filled, mint_token: Callable[..., str]
) -> None:
    filled = filled_sqlite
    ARTIFACTS.mkdir(exist_ok=True)
    with open_store(filled.url) as store:
        latest = store.history(SET, BM25, limit=1)[0]
    result = latest.result
    top1 = f"{(result.top1_hit_rate or 0) * 100:.1f}%"
    top3 = f"{(result.top3_hit_rate or 0) * 100:.1f}%"
    count = result.question_count

    anonymous = browser.new_page()
    assert anonymous.goto(served + "/").status == 401

    page = _signed_in(browser, served, mint_token(username="browser"))
    assert page.goto(served + "/").status == 200
    row = page.locator(f'tr[data-retriever="{BM25}"]')
    # each rate with its 95 % interval (computed here with wilson)
    assert row.locator("td.top1").inner_text() == _with_interval(top1, result.top1_hits, count)
    assert row.locator("td.top3").inner_text() == _with_interval(top3, result.top3_hits, count)
    assert row.locator("svg.spark").count() == 1
    # the stored markup is shown as text, never parsed into elements
    markup_row = page.locator("table.overview tbody tr").first
    assert MARKUP in markup_row.inner_text()
    assert page.locator("table.overview img").count() == 0
    page.screenshot(path=str(ARTIFACTS / "dashboard-overview.png"), full_page=True)

    page.get_by_role("link", name=BM25, exact=True).click()
    page.wait_for_load_state()
    assert "/history" in page.url
    assert page.locator("#latest-top1").inner_text() == top1
    charts = page.locator("svg.chart")
    assert charts.count() == 2
    assert charts.first.locator("polyline").count() >= 2  # top-1 and top-3 lines
    assert charts.first.locator("rect.mark").count() == len(filled.regression_ids)
    assert charts.first.bounding_box()["width"] > 300  # drawn, not collapsed
    page.screenshot(path=str(ARTIFACTS / "dashboard-history.png"), full_page=True)

    run_page = page.goto(f"{served}/runs/{filled.run_ids[BM25][0]}")
    assert run_page.status == 200
    assert page.evaluate("() => window.__pwned") is None  # the stored <script> never ran
    assert page.locator("body script").count() == 0
    assert page.dialogs == []


def test_narrow_screen_and_print_layouts(
    served: str, browser: Any, mint_token: Callable[..., str]
) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page = _signed_in(browser, served, mint_token(), width=380)
    page.goto(served + "/")
    # the table turns into one card per pair: no header row, cells stacked
    assert (
        page.locator("table.overview thead").evaluate("e => getComputedStyle(e).display") == "none"
    )
    page_width = page.evaluate("() => document.documentElement.scrollWidth")
    assert page_width <= 380  # nothing forces sideways scrolling
    page.screenshot(path=str(ARTIFACTS / "dashboard-overview-narrow.png"), full_page=True)
    page.emulate_media(media="print")
    assert page.locator("header nav").evaluate("e => getComputedStyle(e).display") == "none"


@pytest.mark.airflow
def test_dashboard_is_in_the_airflow_navigation_after_login(
    airflow_served: str, browser: Any, filled_sqlite: Filled
) -> None:
    """Sign in on Airflow's own login page, then Browse → Retrieval quality shows the runs."""
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    passwords = json.loads(Path(SimpleAuthManager.get_generated_password_file()).read_text())
    username, password = next(iter(passwords.items()))
    ARTIFACTS.mkdir(exist_ok=True)
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(airflow_served + "/")
    page.wait_for_load_state("networkidle")
    assert "/auth/login" in page.url  # Airflow asks for a login first
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.keyboard.press("Enter")
    page.wait_for_url(airflow_served + "/")
    page.get_by_role("button", name="Browse").click()
    page.get_by_text("Retrieval quality").first.click()
    frame = page.frame_locator("iframe").first
    row = frame.locator(f'tr[data-retriever="{BM25}"]')
    row.wait_for()
    with open_store(filled_sqlite.url) as store:
        latest = store.history(SET, BM25, limit=1)[0]
    top1 = f"{(latest.result.top1_hit_rate or 0) * 100:.1f}%"
    shown = _with_interval(top1, latest.result.top1_hits, latest.result.question_count)
    assert row.locator("td.top1").inner_text() == shown
    page.screenshot(path=str(ARTIFACTS / "dashboard-in-airflow.png"))

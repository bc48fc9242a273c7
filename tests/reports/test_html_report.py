"""The standalone HTML report fits a phone and a desktop in real headless Chromium.

A real run of the demo (BM25 over the handbook, saved to SQLite) is written with ``report RUN_ID
--html FILE`` and opened from disk at 390×844 (a phone) and 1280×800: the page never scrolls
sideways (its tables scroll inside their own wrapper, the figures beside a model judge's grades
among them), one chart is shown (the wide one, or its phone copy), inside the viewport at
(nearly) its own size, and the page still loads nothing from anywhere (every request is counted).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from webui.browsing import launched_chromium

from retrieval_eval.cli import cli
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import open_store

ROOT = Path(__file__).resolve().parents[2]
CONFIG = str(ROOT / "examples" / "retrieval_eval.yaml")
SIZES = [(390, 844), (1280, 800)]


@pytest.fixture(scope="module")
def report_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("html_report")
    db = f"sqlite:///{folder / 'results.sqlite'}"
    runner = CliRunner()
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RETRIEVAL_EVAL_HOME", str(folder / "home"))
        for name in ("RETRIEVAL_EVAL_DB", "RETRIEVAL_EVAL_CONFIG", "GITHUB_STEP_SUMMARY"):
            patch.delenv(name, raising=False)
        done = runner.invoke(
            cli, ["run", "handbook.demo", "handbook_bm25", "--config", CONFIG, "--db", db]
        )
        assert done.exit_code == 0, done.output
        with open_store(db) as store:  # a model judges the top 3: the page gets its figures
            result = store.get_run(1).result
            rows = [
                Judgment(question_id=q.id, document_id=doc, grade=2, rater="judge:sim")
                for q in result.questions
                for doc in q.retrieved[:3]
            ]
            store.judgments.add(result.set_identifier, rows, channel="import", written_by="t")
        path = folder / "run1.html"
        done = runner.invoke(cli, ["runs", "report", "1", "-o", str(path), "--db", db])
        assert done.exit_code == 0, done.output
    return path


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with launched_chromium() as launched:
        yield launched


@pytest.mark.parametrize(("width", "height"), SIZES, ids=lambda v: str(v))
def test_the_report_fits_the_screen_with_its_chart_visible(
    browser: Any, report_file: Path, width: int, height: int
) -> None:
    page = browser.new_page(viewport={"width": width, "height": height})
    requests: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    try:
        page.goto(report_file.as_uri())
        page.evaluate("document.querySelectorAll('details').forEach(d => d.open = true)")
        scroll_width = page.evaluate("document.documentElement.scrollWidth")
        client_width = page.evaluate("document.documentElement.clientWidth")
        assert scroll_width <= client_width, f"page is {scroll_width} px wide at {width} px"
        charts = page.locator("svg:visible")
        assert charts.count() == 1  # the wide chart or its phone copy, never both
        box = charts.first.bounding_box()
        assert box is not None
        assert box["x"] >= 0 and box["x"] + box["width"] <= client_width + 0.5
        assert box["width"] >= min(300, client_width - 40) and box["height"] > 100
        # drawn at (nearly) its own size: its 11 px labels are not shrunk out of reading
        drawn = charts.first.evaluate("svg => svg.viewBox.baseVal.width")
        assert box["width"] / drawn >= 0.9, f"chart drawn at {box['width'] / drawn:.2f}x"
        # the tables are wider than a phone: each scrolls inside its wrapper, not the page
        assert page.locator("#judge-figures table").count() == 1
        tables = page.evaluate(
            "[...document.querySelectorAll('table')].map(t => "
            "[t.parentElement.className, t.parentElement.clientWidth])"
        )
        assert tables and all(
            cls == "scroll" and wrapper <= client_width for cls, wrapper in tables
        )
    finally:
        page.close()
    assert requests == [report_file.as_uri()]  # the file itself, nothing else

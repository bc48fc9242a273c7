"""The run page, the history page and ``/api/runs/ID`` show the MRR (labelled with the depth it
was computed over, the run's fetch limit) and the nDCG@k the run computed, in headless Chromium;
the history's latency axis labels read apart."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from retrieval_eval.store import open_store
from webui.browsing import serve
from webui.fill import BM25, SET, Filled

pytestmark = pytest.mark.browser


@pytest.fixture
def served(filled_sqlite: Filled) -> Iterator[str]:
    from retrieval_eval.webui.app import create_app

    app = create_app(filled_sqlite.url)
    yield from serve(app)
    app.state.store_source.close()


def test_mrr_and_ndcg_on_the_run_and_history_pages_and_the_api(
    served: str, browser: Any, filled_sqlite: Filled, mint_token: Callable[..., str]
) -> None:
    run_id = filled_sqlite.run_ids[BM25][-1]
    with open_store(filled_sqlite.url) as store:
        result = store.get_run(run_id).result
    mrr, depth = result.metrics["mrr"], result.settings.fetch_limit
    ndcg = {int(k[5:]): v for k, v in result.metrics.items() if k.startswith("ndcg@")}
    assert mrr is not None and ndcg  # the stored run computed them
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.add_cookies([{"name": "_token", "value": mint_token(), "url": served}])
    page = context.new_page()

    api = page.request.get(f"{served}/api/runs/{run_id}").json()["run"]
    assert (api["mrr"], api["mrr_depth"]) == (mrr, depth)
    assert {int(k): v for k, v in api["ndcg_at"].items()} == ndcg

    assert page.goto(f"{served}/runs/{run_id}").status == 200
    card = page.locator(".card", has=page.locator("#mrr"))
    assert card.locator(".label").text_content() == f"MRR@{depth}"
    assert page.text_content("#mrr") == f"{mrr:.3f}"
    for k, value in ndcg.items():
        assert page.text_content(f"#ndcg{k}") == f"{value:.3f}"

    assert page.goto(f"{served}/history?set={SET}&retriever={BM25}").status == 200
    headers = page.locator("table.runs th").all_text_contents()
    assert f"MRR@{depth}" in headers and all(f"nDCG@{k}" in headers for k in ndcg)
    row = page.locator(f"tr[data-run-id='{run_id}']")
    assert row.locator("td.mrr").text_content() == f"{mrr:.3f}"
    for k, value in ndcg.items():
        assert row.locator(f"td.ndcg{k}").text_content() == f"{value:.3f}"
    for chart in page.locator("svg[aria-label='Latency per question']").all():
        ticks = chart.locator("text.y-tick").all_text_contents()
        assert len(ticks) == 5 and len(set(ticks)) == 5, ticks
    context.close()

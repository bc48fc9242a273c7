"""The drift and replay pages: figures as stored, paging and bucket filters in SQL, stored query
texts escaped, errors as on every page, and both pages in headless Chromium at desktop and phone
widths (no sideways scrolling, charts visible and readable, not blank)."""

from __future__ import annotations

import base64
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from retrieval_eval.config.models import load_config
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.replay import run_replay
from webui.browsing import serve

ROOT = Path(__file__).resolve().parents[2]
HOSTILE = "<script>alert(1)</script> refund {{ 7*7 }}"


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """A store with three replays of one series: first, unchanged, then after documents went."""
    folder = tmp_path_factory.mktemp("replays")
    log = folder / "log.jsonl"
    rows = [{"query": HOSTILE, "count": 40}]
    rows += [
        json.loads(line) for line in (ROOT / "examples/logs/queries.jsonl").read_text().splitlines()
    ]
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    shrunk = folder / "corpus"
    shutil.copytree(ROOT / "examples" / "corpus", shrunk)
    shutil.rmtree(shrunk / "billing")
    url = f"sqlite:///{folder / 'store.sqlite'}"
    ids = []
    for corpus, version in (
        (ROOT / "examples/corpus", "v1"),
        (ROOT / "examples/corpus", "v2"),
        (shrunk, "v3"),
    ):
        path = folder / f"{version}.yaml"
        path.write_text(
            yaml.safe_dump(
                {
                    "retrievers": {"bm25": {"type": "lexical", "corpus": str(corpus)}},
                    "samples": {"log": {"source": {"path": str(log)}, "casefold": True}},
                }
            )
        )
        with open_store(url) as store:
            outcome = run_replay(load_config(path), store, "log", "bm25", index_version=version)
        ids.append(outcome.replay_id)
    return {"url": url, "ids": ids}


@pytest.fixture
def client(replayed: dict[str, Any]) -> Iterator[TestClient]:
    app = create_app(replayed["url"], require_auth=False)
    with TestClient(app) as test_client:
        yield test_client
    app.state.store_source.close()


def test_the_drift_page_and_its_twin_give_the_stored_figures(
    client: TestClient, replayed: dict[str, Any]
) -> None:
    data = client.get("/api/drift", params={"sample": "log", "retriever": "bm25"}).json()
    assert [r["replay_id"] for r in data["replays"]] == replayed["ids"]
    assert [r["state"] for r in data["replays"]][:2] == ["first", "no_drift"]
    assert [r["index_version"] for r in data["replays"]] == ["v1", "v2", "v3"]
    assert data["replays"][2]["compared_index_version"] == "v2"
    with open_store(replayed["url"]) as store:
        last = store.replays.get(replayed["ids"][2])
    assert data["replays"][2]["mean_rbo"] == pytest.approx(last.mean_rbo)
    page = client.get("/drift", params={"sample": "log", "retriever": "bm25"})
    assert page.status_code == 200 and f"{last.mean_rbo:.3f}" in page.text
    assert "v3" in page.text and "vs v2" in page.text
    overview = client.get("/api/overview").json()
    assert [(s["sample"], s["latest_id"]) for s in overview["replays"]] == [
        ("log", replayed["ids"][2])
    ]


def test_a_replay_page_lists_the_most_changed_first_with_both_rankings(
    client: TestClient, replayed: dict[str, Any]
) -> None:
    rid = replayed["ids"][2]
    data = client.get(f"/api/replays/{rid}").json()
    moved = [q for q in data["queries"] if q["rbo"] is not None]
    weights = [(1 - q["rbo"]) * q["count"] for q in moved]
    assert weights == sorted(weights, reverse=True) and data["total"] == 41
    top = data["queries"][0]
    assert top["before"] and top["after"] and set(top["moves"]) == set(top["after"])
    assert all(v is None or isinstance(v, int) for v in top["moves"].values())
    tail = client.get(f"/api/replays/{rid}", params={"bucket": "tail"}).json()
    assert tail["total"] < data["total"] and all(q["bucket"] == "tail" for q in tail["queries"])
    assert client.get(f"/api/replays/{rid}", params={"page": 2}).status_code == 404
    assert client.get(f"/api/replays/{rid}", params={"bucket": "middle"}).status_code == 400
    assert client.get("/api/replays/999").status_code == 404


def test_stored_query_texts_are_escaped_and_personal_data_never_shown(
    client: TestClient, replayed: dict[str, Any]
) -> None:
    html = client.get(f"/replays/{replayed['ids'][2]}").text
    assert "<script>alert(1)" not in html and "&lt;script&gt;" in html
    assert "{{ 7*7 }}" in html or "49" not in html
    assert "jane.doe" not in html  # the demo log's email was redacted when the sample was drawn


def test_a_long_parameter_is_not_echoed_whole(client: TestClient) -> None:
    response = client.get("/drift", params={"sample": "x" * 60_000, "retriever": "bm25"})
    assert response.status_code == 404 and len(response.text) < 20_000


VIEWPORTS = {"desktop": (1280, 800), "phone": (390, 844)}


@pytest.mark.browser
@pytest.mark.parametrize("viewport", list(VIEWPORTS))
def test_drift_and_replay_pages_in_chromium(
    browser: Any, replayed: dict[str, Any], viewport: str, tmp_path: Path
) -> None:
    app = create_app(replayed["url"], require_auth=False)
    served = serve(app)
    base = next(served)
    width, height = VIEWPORTS[viewport]
    context = browser.new_context(viewport={"width": width, "height": height})
    try:
        page = context.new_page()
        for name, path, visible in (
            ("drift", "/drift?sample=log&retriever=bm25", ("h1", "#latest-rbo", "table.runs")),
            ("replay", f"/replays/{replayed['ids'][2]}", ("h1", "#mean-rbo", "table.queries")),
        ):
            response = page.goto(base + path)
            assert response.status == 200
            scroll = page.evaluate("() => [document.scrollingElement.scrollWidth, innerWidth]")
            assert scroll[0] <= scroll[1], f"{name} scrolls sideways at {viewport}: {scroll}"
            for selector in visible:
                assert page.locator(selector).first.is_visible(), f"{selector} hidden at {viewport}"
            charts = page.evaluate(
                "() => [...document.querySelectorAll('svg.chart, svg.chart-narrow')]"
                ".filter(s => getComputedStyle(s).display !== 'none').length"
            )
            assert charts == (2 if name == "drift" else 0)
            png = page.screenshot(full_page=True)
            (tmp_path / f"{name}-{viewport}.png").write_bytes(png)
            assert len(base64.b64encode(png)) > 10_000  # a drawn page, not an empty one
    finally:
        context.close()
        served.close()
        app.state.store_source.close()

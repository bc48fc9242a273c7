"""The history page names the index build each run measured: its chart ticks, its table (with
the baseline's build beside it), and the JSON twin; a run that recorded none shows its date."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from store.builders import hits, make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import judge_and_save


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path_factory.mktemp('indexed') / 'results.sqlite'}"
    with open_store(url) as store:
        for day, version in enumerate(("2026-11-29.1", "2026-11-30.2", None)):
            run = make_run(hits(3, 4), day=day).model_copy(update={"index_version": version})
            judge_and_save(store, run, Thresholds())
    app = create_app(url, require_auth=False)
    with TestClient(app) as test_client:
        yield test_client
    app.state.store_source.close()


def _cells(html: str) -> dict[str, str]:
    """Each runs-table row's Index cell, by run id."""
    rows = re.findall(r'<tr data-run-id="(\d+)">(.*?)</tr>', html, re.S)
    return {
        run_id: re.sub(
            r"<[^>]+>", "", re.search(r'data-label="Index"[^>]*>(.*?)</td>', row, re.S)[1]
        )
        for run_id, row in rows
    }


def test_the_table_names_both_builds_and_the_ticks_name_each(client: TestClient) -> None:
    response = client.get("/history", params={"set": "demo.set", "retriever": "bm25"})
    assert response.status_code == 200
    html = response.text
    assert _cells(html) == {
        "3": "–",
        "2": "2026-11-30.2 vs 2026-11-29.1",
        "1": "2026-11-29.1",
    }
    ticks = re.findall(r"<tspan[^>]*>([^<]*)</tspan>", html)
    assert {"2026-11-29.1", "2026-11-30.2", "01-03 03:00"} <= set(ticks)  # run 3: its date


def test_the_json_twin_carries_the_versions(client: TestClient) -> None:
    data = client.get("/api/history", params={"set": "demo.set", "retriever": "bm25"}).json()
    assert [(r["index_version"], r["baseline_index_version"]) for r in data["runs"]] == [
        ("2026-11-29.1", None),
        ("2026-11-30.2", "2026-11-29.1"),
        (None, "2026-11-30.2"),
    ]
    assert all(r["package_version"] for r in data["runs"])


@pytest.mark.parametrize(
    ("run_id", "named"),
    [
        ("1", "index 2026-11-29.1"),
        ("2", "index 2026-11-30.2 vs 2026-11-29.1 (baseline)"),
        ("3", None),
    ],
)
def test_the_run_page_names_its_build_and_its_baselines(
    client: TestClient, run_id: str, named: str | None
) -> None:
    """The run page's header names the index build, and the baseline's when it was compared."""
    html = client.get(f"/runs/{run_id}").text
    shown = re.search(r'<span id="index-version">(.*?)</span>', html, re.S)
    assert (shown[1] if shown else None) == named

"""An invalid run's page names no baseline run: it was never compared (issue 13, item 6)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.webui.app import create_app
from webui.busy import Busy


@pytest.fixture
def client(busy_sqlite: Busy) -> Iterator[TestClient]:
    app = create_app(busy_sqlite.url, require_auth=False)
    with TestClient(app) as test_client:
        yield test_client
    app.state.store_source.close()


def test_an_invalid_run_page_names_no_baseline(client: TestClient, busy_sqlite: Busy) -> None:
    data = client.get(f"/api/runs/{busy_sqlite.invalid}").json()
    assert data["run"]["status"] == "invalid" and data["verdict"]["state"] == "invalid_run"
    assert data["run"]["baseline_run_id"] is None and data["baseline"] is None
    html = client.get(f"/runs/{busy_sqlite.invalid}").text
    assert "This run was not compared with a baseline" in html
    assert "Baseline: " not in html and "Baseline run" not in html
    # a run that was compared does name its baseline on the same page layout
    compared = client.get(f"/runs/{busy_sqlite.regression}").text
    assert "Baseline: " in compared

"""An invalid run's page names no baseline run: it was never compared (issue 13, item 6)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from store.builders import hits, make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import record_run


@pytest.fixture
def runs(tmp_path: Path) -> tuple[str, int, int]:
    """A store with a good run, then an outage (invalid) and a compared run of the same pair."""
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    ids = []
    for day, questions in enumerate(
        [hits(8, 10), hits(0, 10, error="connection refused"), hits(7, 10)]
    ):
        recorded = record_run(make_run(questions, day=day), store_url=url, thresholds=Thresholds())
        assert recorded.run_id is not None
        ids.append(recorded.run_id)
    return url, ids[1], ids[2]


@pytest.fixture
def client(runs: tuple[str, int, int]) -> Iterator[TestClient]:
    app = create_app(runs[0], require_auth=False)
    with TestClient(app) as test_client:
        yield test_client
    app.state.store_source.close()


def test_an_invalid_run_page_names_no_baseline(
    client: TestClient, runs: tuple[str, int, int]
) -> None:
    _, invalid, compared = runs
    data = client.get(f"/api/runs/{invalid}").json()
    assert data["run"]["status"] == "invalid" and data["verdict"]["state"] == "invalid_run"
    assert data["run"]["baseline_run_id"] is None and data["baseline"] is None
    html = client.get(f"/runs/{invalid}").text
    assert "This run was not compared with a baseline" in html
    assert "Baseline: " not in html and "Baseline run" not in html
    # the next run is compared with the good one, and its page says so
    assert "Baseline: " in client.get(f"/runs/{compared}").text

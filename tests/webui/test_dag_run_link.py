"""A run made by a DAG links its run key to that DAG run in the Airflow UI (issue 21.5).

Inside Airflow the dashboard is mounted at ``/retrieval-eval``, so the Airflow UI is the same
origin's root; served alone (``retrieval-eval serve --airflow-url``) it is the URL given; with
neither, or for a run the CLI made, the key stays plain text. The store is a real SQLite file.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from store.builders import hits, make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.reports.links import DASHBOARD_PREFIX
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import record_run

DAG_ID = "retrieval_eval__demo_set__bm25"
RUN_ID = "scheduled__2026-12-01T02:00:00+00:00"
ENCODED = "scheduled__2026-12-01T02%3A00%3A00%2B00%3A00"


@dataclass
class Runs:
    url: str
    from_dag: int
    from_cli: int


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    url = f"sqlite:///{tmp_path_factory.mktemp('links') / 'results.sqlite'}"
    made = [
        record_run(
            make_run(hits(8, 10), day=day, run_key=key), store_url=url, thresholds=Thresholds()
        )
        for day, key in ((0, f"airflow:{DAG_ID}:{RUN_ID}"), (1, None))
    ]
    ids = [m.run_id for m in made]
    assert None not in ids
    return Runs(url, *ids)  # type: ignore[arg-type]


def _key_cell(html: str) -> str:
    found = re.search(r" · key (.*?)</p>", html, flags=re.S)
    assert found is not None
    return found.group(1)


@pytest.fixture(scope="module")
def mounted(runs: Runs) -> Iterator[TestClient]:
    """The app mounted as the Airflow plugin mounts it (auth aside)."""
    app = create_app(runs.url, require_auth=False)
    airflow = FastAPI()
    airflow.mount(DASHBOARD_PREFIX, app)
    with TestClient(airflow) as client:
        yield client
    app.state.store_source.close()


def test_inside_airflow_the_run_key_links_to_its_dag_run_on_the_same_origin(
    mounted: TestClient, runs: Runs
) -> None:
    cell = _key_cell(mounted.get(f"{DASHBOARD_PREFIX}/runs/{runs.from_dag}").text)
    assert cell == (
        f'<a class="mono" id="dag-run" href="/dags/{DAG_ID}/runs/{ENCODED}" target="_top" '
        f'title="the Airflow DAG run that made this run">airflow:{DAG_ID}:{RUN_ID}</a>'
    )


def test_a_run_the_cli_made_has_no_dag_run_link(mounted: TestClient, runs: Runs) -> None:
    cell = _key_cell(mounted.get(f"{DASHBOARD_PREFIX}/runs/{runs.from_cli}").text)
    assert cell.startswith('<span class="mono">') and "href" not in cell


def test_served_alone_it_links_to_the_airflow_url_given_or_not_at_all(runs: Runs) -> None:
    for airflow_url, expected in (
        (
            "https://airflow.example/",
            f'href="https://airflow.example/dags/{DAG_ID}/runs/{ENCODED}"',
        ),
        (None, None),
    ):
        app = create_app(runs.url, require_auth=False, airflow_url=airflow_url)
        with TestClient(app) as client:
            cell = _key_cell(client.get(f"/runs/{runs.from_dag}").text)
        app.state.store_source.close()
        if expected is None:
            assert "href" not in cell, cell
        else:
            assert expected in cell, cell

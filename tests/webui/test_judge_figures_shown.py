"""The run page shows the figures beside model judgments only when the store has some for the
set (issue 37, item 4): holes by who judged and the hit rate three ways."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from webui.fill import SET, Filled


@pytest.fixture
def client(store_copy: str) -> Iterator[TestClient]:
    app = create_app(store_copy, require_auth=False)
    with TestClient(app) as client:
        yield client
    app.state.store_source.close()


def test_the_run_page_shows_judge_figures_only_with_model_judgments(
    client: TestClient, store_copy: str, filled_sqlite: Filled
) -> None:
    run_id = filled_sqlite.regression_ids[0]
    before = client.get(f"/api/runs/{run_id}").json()
    assert before["judge_figures"] is None
    assert 'id="judge-figures"' not in client.get(f"/runs/{run_id}").text
    with open_store(store_copy) as store:
        run = store.get_run(run_id)
        rows = [
            Judgment(question_id=q.id, document_id=doc, grade=2, rater="judge:sim")
            for q in run.result.questions
            for doc in q.retrieved[:3]
            if doc not in q.expected_document_ids
        ]
        store.judgments.add(SET, rows, channel="import", written_by="test")
    after = client.get(f"/api/runs/{run_id}").json()["judge_figures"]
    assert after["machine_raters"] == ["judge:sim"]
    assert after["holes"]["machine_judged"] == len(rows)
    page = client.get(f"/runs/{run_id}").text
    assert 'id="judge-figures"' in page and "Model judgments (judge:sim)" in page
    assert "Prediction-powered" in page and "top3" in page

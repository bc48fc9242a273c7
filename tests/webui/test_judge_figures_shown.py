"""The run page shows the figures beside model judgments only when the store has some for the
set (issue 37, item 4): holes by who judged and the hit rate three ways."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape

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


def test_the_compare_page_shows_each_retrievers_judge_figures(
    client: TestClient, store_copy: str, filled_sqlite: Filled
) -> None:
    """Holes by who judged and the people + model hit rate, counted here from the latest runs'
    rankings, the set's labels and the machine grades this test stores."""
    assert 'id="judge-figures"' not in client.get("/compare", params={"set": SET}).text
    retrievers = list(filled_sqlite.run_ids)
    with open_store(store_copy) as store:
        latest = {r: store.get_run(filled_sqlite.run_ids[r][-1]).result for r in retrievers}
        rows, grades = [], {}
        for result in latest.values():
            for q in result.questions:
                for i, doc in enumerate(q.retrieved[:3]):
                    if doc not in q.expected_document_ids and (q.id, doc) not in grades:
                        grades[(q.id, doc)] = 2 * ((len(q.id) + i) % 2)  # relevant, or not
                        rows.append(Judgment(question_id=q.id, document_id=doc,
                                             grade=grades[(q.id, doc)], rater="judge:sim"))  # fmt: skip
        store.judgments.add(SET, rows, channel="import", written_by="test")
    api = client.get("/api/compare", params={"set": SET}).json()["leaderboard"]["entries"]
    page = client.get("/compare", params={"set": SET}).text
    assert 'id="judge-figures"' in page and "Model judgments (judge:sim)" in page
    for retriever, result in latest.items():
        depth = min(10, result.settings.depth)
        places = [(q.id, d, d in q.expected_document_ids) for q in result.questions
                  for d in q.retrieved[:depth]]  # fmt: skip
        labelled = sum(target for _, _, target in places)
        machine = sum(not target and (q, d) in grades for q, d, target in places)
        hits = sum(
            q.error is None and any(
                d in q.expected_document_ids or grades.get((q.id, d), 0) >= 1
                for d in q.retrieved[:1]
            ) if q.expected_document_ids else q.hit_at(1)
            for q in result.questions
        )  # fmt: skip
        entry = next(e for e in api if e["retriever"] == retriever)
        holes = entry["judge_figures"]["holes"]
        assert (holes["slots"], holes["human_judged"], holes["machine_judged"]) == (
            len(places),
            labelled,
            machine,
        )
        combined = entry["judge_figures"]["hit_rates"]["top1"]["human_machine"]
        assert combined["rate"] == pytest.approx(hits / len(result.questions))
        # the page's rows for this retriever: who judged on the first, the rates per depth
        row = re.search(
            rf'<tr data-retriever="{re.escape(str(escape(retriever)))}" data-depth="top1">(.*?)</tr>',
            page,
            re.S,
        )
        assert row is not None, retriever
        cells = row.group(1)
        shares = [
            labelled / len(places),
            machine / len(places),
            1 - (labelled + machine) / len(places),
        ]
        assert f"people {shares[0]:.1%}" in cells and f"a model only {shares[1]:.1%}" in cells
        assert f'class="num human_machine">{hits / len(result.questions):.1%}' in cells
        assert 'class="num human"><span class="muted">n/a' in cells  # nobody graded

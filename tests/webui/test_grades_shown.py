"""A graded run on the dashboard: the run page and its JSON twin show each target's grade."""

from __future__ import annotations

import re
from pathlib import Path

from fastapi.testclient import TestClient

from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import score_many, summarise_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import Verdict
from retrieval_eval.webui.app import create_app

GOLDEN = GoldenQuestionSet.model_validate(
    {
        "identifier": "graded",
        "questions": [
            {"id": "g1", "question": "a?", "form": "match", "grades": {"a.md": 3, "b.md": 1}},
            {"id": "p1", "question": "b?", "form": "gap", "expected_document_ids": ["x.md"]},
        ],
    }
)


def test_the_run_page_shows_grades_where_a_question_gives_them(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    settings = RunSettings()
    questions = score_many(GOLDEN.questions, [["b.md", "a.md"], ["x.md"]], depth=settings.depth)
    result = summarise_set(GOLDEN, questions, retriever="r", settings=settings)
    with open_store(url) as store:
        run_id = store.runs.save(result, Verdict(state="baseline"))
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        data = client.get(f"/api/runs/{run_id}").json()
        html = client.get(f"/runs/{run_id}").text
    app.state.store_source.close()
    by_id = {q["id"]: q for q in data["questions"]}
    assert by_id["g1"]["grades"] == {"a.md": 3, "b.md": 1}
    assert by_id["p1"]["grades"] is None and by_id["p1"]["expected_document_ids"] == ["x.md"]
    rows = dict(re.findall(r'<tr data-question-id="([^"]+)"[^>]*>(.*?)</tr>', html, flags=re.S))
    assert re.search(r'class="grade" title="graded 3 of 3">3</span>', rows["g1"])
    assert 'class="grade"' not in rows["p1"]


def test_the_csv_report_adds_a_grades_column_only_for_a_graded_run() -> None:
    import csv
    import io
    import json

    from retrieval_eval.reports.csv import render_csv

    settings = RunSettings()
    questions = score_many(GOLDEN.questions, [["b.md"], ["x.md"]], depth=settings.depth)
    rows = list(csv.DictReader(io.StringIO(render_csv(
        summarise_set(GOLDEN, questions, retriever="r", settings=settings)
    ))))  # fmt: skip
    assert json.loads(rows[0]["grades"]) == {"a.md": 3, "b.md": 1} and rows[1]["grades"] == ""
    plain = GOLDEN.model_copy(update={"questions": GOLDEN.questions[1:]})
    ungraded = score_many(plain.questions, [["x.md"]], depth=settings.depth)
    header = render_csv(summarise_set(plain, ungraded, retriever="r", settings=settings))
    assert header.splitlines()[0].endswith("stale_label,dead_ids")

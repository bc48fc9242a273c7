"""The run page's order and ``misses`` filter follow the run's gated depths: a run gating
``[1, 5]`` lists its top-5 misses first, and under ``misses`` by default (any gated depth's with
``depth=``), counted from the run's stored figures, and the SQL that pages them agrees with the
scoring rules at every depth.

Real SQLite stores filled by ``record_run``; the app over them with FastAPI's TestClient."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from store.builders import ranked_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation import MAX_DEPTH
from retrieval_eval.store import open_store
from retrieval_eval.store.questions import QuestionFilter
from retrieval_eval.webui import routes
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import record_run

# one target each, at this rank (None: not retrieved); forms split them for the slice counts
RANKS = {"a0": 1, "a1": 1, "b0": 2, "b1": 3, "c0": 4, "c1": 5, "d0": 7, "d1": 12, "n0": None}
GAP = {"b1", "c0", "d0", "n0"}


@dataclass
class Run:
    client: TestClient
    url: str
    run_id: int
    seed_id: int  # a run of the seed's depths [1, 3]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    url = f"sqlite:///{tmp_path_factory.mktemp('misses') / 'results.sqlite'}"
    forms = {q: "gap" for q in GAP}
    deep = record_run(
        ranked_run(RANKS, [1, 5], forms=forms), store_url=url, thresholds=Thresholds()
    )
    seed = record_run(
        ranked_run(RANKS, [1, 3], forms=forms, retriever="dense"),
        store_url=url,
        thresholds=Thresholds(),
    )
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        assert deep.run_id and seed.run_id
        yield Run(client, url, deep.run_id, seed.run_id)
    app.state.store_source.close()


def _missed(depth: int, form: str | None = None) -> list[str]:
    """The oracle: the questions whose target is not within ``depth``, in the set's order."""
    return [
        q
        for q, rank in RANKS.items()
        if (rank is None or rank > depth) and (form is None or (q in GAP) == (form == "gap"))
    ]


def _listed(run: Run, run_id: int, **params: object) -> dict:
    response = run.client.get(f"/api/runs/{run_id}", params={"show": "misses", **params})
    assert response.status_code == 200, response.text
    return response.json()


def test_misses_are_counted_at_the_deepest_gated_depth(run: Run) -> None:
    data = _listed(run, run.run_id)
    assert data["listing"]["depth"] == 5 and data["listing"]["depths"] == [1, 5]
    assert data["listing"]["matching"] == len(_missed(5)) == 3
    assert sorted(q["id"] for q in data["questions"]) == sorted(_missed(5))
    gap = _listed(run, run.run_id, form="gap")
    assert sorted(q["id"] for q in gap["questions"]) == sorted(_missed(5, "gap")) == ["d0", "n0"]
    # the seed's depths keep the seed's meaning: top-3 misses
    seed = _listed(run, run.seed_id)
    assert seed["listing"]["depth"] == 3 and seed["listing"]["matching"] == len(_missed(3)) == 5


def _ordered(depth: int) -> list[str]:
    """The oracle of the page's order without flips or stale labels: the misses at ``depth``,
    then the other top-1 misses, then the top-1 hits, each in the set's order."""
    missed, top1_missed = _missed(depth), _missed(1)
    return sorted(RANKS, key=lambda q: 0 if q in missed else 1 if q in top1_missed else 2)


def test_the_page_lists_the_misses_at_the_deepest_gated_depth_first(run: Run) -> None:
    """The run page leads with the misses the report's question table lists: at the deepest
    gated depth. A run gating [1, 5] puts its top-5 misses first, and a question hit at rank 4
    or 5 (a top-3 miss) after them, with the top-1 misses; the seed's [1, 3] keeps top-3."""
    deep = run.client.get(f"/api/runs/{run.run_id}").json()
    assert [q["id"] for q in deep["questions"]] == _ordered(5)
    assert _ordered(5)[:3] == ["d0", "d1", "n0"] and _ordered(5)[3:7] == ["b0", "b1", "c0", "c1"]
    seed = run.client.get(f"/api/runs/{run.seed_id}").json()
    assert [q["id"] for q in seed["questions"]] == _ordered(3)
    # the page lists them in that order and marks the same questions as misses
    html = run.client.get(f"/runs/{run.run_id}").text
    rows = re.findall(r'<tr data-question-id="([^"]+)" class="([^"]*)"', html)
    assert [qid for qid, _ in rows] == _ordered(5)
    assert [qid for qid, marks in rows if "miss" in marks.split()] == _missed(5)


def test_a_depth_choice_lists_that_depths_misses(run: Run) -> None:
    data = _listed(run, run.run_id, depth=1)
    assert data["listing"]["depth"] == 1
    assert sorted(q["id"] for q in data["questions"]) == sorted(_missed(1))
    html = run.client.get(f"/runs/{run.run_id}", params={"show": "misses", "depth": 1}).text
    assert '<label>Misses at<select name="depth"><option value="1" selected>top-1</option>' in html
    assert "<strong>top-1 misses</strong>" in html
    # a chosen depth is kept in the page's links; the default one is left out
    assert "show=errors&amp;depth=1" in html
    plain = run.client.get(f"/runs/{run.run_id}").text
    assert '<option value="5" selected>top-5</option>' in plain and "show=misses" in plain
    assert "depth=5" not in plain


def test_a_depth_the_run_does_not_gate_is_a_404_naming_its_depths(run: Run) -> None:
    for path in (f"/api/runs/{run.run_id}", f"/runs/{run.run_id}"):
        response = run.client.get(path, params={"show": "misses", "depth": 3})
        assert response.status_code == 404
        assert "depth=3: run" in response.text and "its gated depths: 1, 5" in response.text
    assert run.client.get(f"/api/runs/{run.run_id}", params={"depth": 0}).status_code == 400


def test_the_sql_count_agrees_with_the_stored_figures_at_every_depth(run: Run) -> None:
    """``misses`` is counted from the stored hits; paging it runs the SQL: both agree with the
    scoring rules, and the SQL at every depth, gated or not."""
    with open_store(run.url) as store:
        stored = store.get_run(run.run_id, questions=False)
        ids = tuple(RANKS)  # naming the ids makes the store count the rows in SQL
        for depth in range(1, 14):
            counted = store.questions.count(stored, QuestionFilter(miss_at=depth, ids=ids))
            assert counted == len(_missed(depth)), depth
        for form in ("gap", "match"):
            where = QuestionFilter(miss_at=5, form=form)
            assert store.questions.count(stored, where) == len(_missed(5, form))


def test_misses_are_counted_from_the_stored_figures(tmp_path: Path) -> None:
    """With the run's question rows gone, the stored hits still count its misses (the SQL
    over the rows finds none): the filter's count reads no question row."""
    from sqlalchemy import delete

    from retrieval_eval.store.schema import eval_result_question

    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    recorded = record_run(ranked_run(RANKS, [1, 5]), store_url=url, thresholds=Thresholds())
    with open_store(url) as store:
        with store.engine.begin() as conn:
            conn.execute(
                delete(eval_result_question).where(eval_result_question.c.run_id == recorded.run_id)
            )
        stored = store.get_run(recorded.run_id or 0, questions=False)
        assert store.questions.count(stored, QuestionFilter(miss_at=5)) == len(_missed(5))
        assert store.questions.count(stored, QuestionFilter(miss_at=5, ids=tuple(RANKS))) == 0


def test_the_route_knows_the_deepest_depth() -> None:
    assert routes.MAX_DEPTH == MAX_DEPTH

"""The compare page and ``/api/compare``: the leaderboard of N retrievers, as the CLI prints it.

On stores of real runs (``filled``, SQLite and PostgreSQL) and on a SQLite store of hand-made
runs whose top-1 outcomes differ on purpose (``board``), served by the real app.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from store.builders import make_run, question

from retrieval_eval.config.models import Thresholds
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.webui.app import create_app
from retrieval_eval.webui.compare_view import chosen
from retrieval_eval.workflows.leaderboard import compare_runs, latest_runs
from webui.fill import BM25, MARKUP, SET, TRUNCATED, Filled

HAND = "demo.set"
#              top-1 of 12: 10, 7 (+2 at top-3) and 2; "single.set" has one retriever only
PATTERNS = {"best": "111111111100", "middle": "111111100033", "worst": "110000000000"}


def save_board(url: str) -> None:
    """The runs of PATTERNS on HAND, and one run of a retriever alone on "single.set"."""
    with open_store(url) as store:
        for name, marks in PATTERNS.items():
            qs = [question(f"q{i:03d}", c == "1", c in "13") for i, c in enumerate(marks)]
            run = make_run(qs, retriever=name)
            store.runs.save(run, detect_regression(run, None, Thresholds()))
        alone = make_run([question("q000", True)], retriever="alone", set_identifier="single.set")
        store.runs.save(alone, detect_regression(alone, None, Thresholds()))


@pytest.fixture
def board(tmp_path: Path) -> Iterator[TestClient]:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    save_board(url)
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        client.url = url  # type: ignore[attr-defined]
        yield client
    app.state.store_source.close()


def _expected(url: str, set_identifier: str, names: list[str], **kwargs: object) -> dict:
    with open_store(url) as store:
        runs = latest_runs(store, set_identifier, names)
    return compare_runs(runs, **kwargs).model_dump(mode="json")  # type: ignore[arg-type]


def test_api_is_the_leaderboard_of_the_named_retrievers(client: TestClient, filled: Filled) -> None:
    names = [BM25, TRUNCATED, MARKUP]
    data = client.get("/api/compare", params={"set": SET, "r": names}).json()
    assert data["leaderboard"] == _expected(filled.url, SET, names)
    with open_store(filled.url) as store:
        assert data["retrievers"] == store.runs.retrievers_for(SET)
    # the truncated retriever keeps BM25's first result: the same top-1 outcome everywhere
    board = data["leaderboard"]
    assert board["differences"] == []
    assert all(e["versus"]["p_holm"] == 1.0 for e in board["entries"] if e["versus"])


def test_a_and_b_are_the_two_retriever_case(client: TestClient, filled: Filled) -> None:
    old = client.get("/api/compare", params={"set": SET, "a": BM25, "b": TRUNCATED}).json()
    new = client.get("/api/compare", params={"set": SET, "r": [BM25, TRUNCATED]}).json()
    assert old == new
    assert [e["retriever"] for e in old["leaderboard"]["entries"]] == sorted([BM25, TRUNCATED])


def test_page_shows_the_board_the_marker_and_the_disagreements(board: TestClient) -> None:
    names = ["worst", "middle", "best"]
    html = board.get("/compare", params={"set": HAND, "r": names}).text
    data = _expected(board.url, HAND, names)  # type: ignore[attr-defined]
    rows = re.findall(r'<tr data-retriever="([^"]+)"', html)
    assert rows == [e["name"] for e in data["entries"]] == ["best", "middle", "worst"]
    assert 'class="reference"' in html and "(reference)" in html
    # Wilson interval of best's 10/12, the paired change of worst (-8 of 12), both p-values
    assert '83.3% <span class="muted ci">[55.2%, 95.3%]</span>' in html
    worst = data["entries"][2]["versus"]
    assert ">-66.7 pts</span>" in html
    assert f">{worst['p_value']:.3g}</td>" in html and f">{worst['p_holm']:.3g}</td>" in html
    assert html.count('class="marker"><b title="significant at α = 0.05">*</b>') == 1
    assert "Holm-corrected across the 2 comparisons" in html
    assert html.count("<tr data-question-id=") == len(data["differences"]) == 8
    assert "Questions where they disagree on top-1 (8)" in html


def test_reference_and_alpha_reach_the_board_and_the_form(board: TestClient) -> None:
    params = {"set": HAND, "r": ["best", "middle", "worst"], "reference": "middle", "alpha": "0.5"}
    data = board.get("/api/compare", params=params).json()["leaderboard"]
    assert data["reference"] == "middle" and data["alpha"] == 0.5
    assert [e["versus"]["significant"] for e in data["entries"] if e["versus"]] == [True, True]
    html = board.get("/compare", params=params).text
    assert '<option value="middle" selected>' in html
    assert '<option value="0.5" selected>' in html
    # the form's empty reference is "the best"
    best = board.get("/api/compare", params={**params, "reference": ""}).json()
    assert best["leaderboard"]["reference"] == "best"


def test_fewer_than_two_named_fill_up_from_the_stored(board: TestClient) -> None:
    assert chosen([], ["a", "b", "c"]) == ["a", "b", "c"]
    assert chosen(["c"], ["a", "b", "c"]) == ["c", "a", "b"]
    assert chosen(["b", "b"], ["a", "b"]) == ["b", "a"]
    assert chosen(["c", "a"], ["a", "b", "c"]) == ["c", "a"]
    whole = board.get("/api/compare", params={"set": HAND}).json()["leaderboard"]
    assert {e["name"] for e in whole["entries"]} == set(PATTERNS)
    one = board.get("/api/compare", params={"set": HAND, "a": "worst"}).json()["leaderboard"]
    assert {e["name"] for e in one["entries"]} == set(PATTERNS)
    checked = board.get("/compare", params={"set": HAND, "r": ["best", "worst"]}).text
    assert checked.count(" checked>") == 2


@pytest.mark.parametrize(
    "params,status,message",
    [
        ({"set": "single.set"}, 400, "a comparison needs at least two retrievers, got 1"),
        ({"set": "no.such.set"}, 404, "no stored runs for set 'no.such.set'"),
        ({"set": HAND, "r": ["best", "ghost"]}, 404, "retrievers with runs on this set: best"),
        ({"set": HAND, "reference": "ghost"}, 404, "reference 'ghost' is not among"),
        ({"set": HAND, "alpha": "0"}, 400, "bad request: alpha"),
        ({"set": HAND, "alpha": "1"}, 400, "bad request: alpha"),
        ({"set": HAND, "r": ["best", "x\x00"]}, 400, "bad request: r.1"),
    ],
)
def test_bad_requests(board: TestClient, params: dict, status: int, message: str) -> None:
    api = board.get("/api/compare", params=params)
    assert api.status_code == status and message in api.json()["detail"]
    page = board.get("/compare", params=params)
    assert page.status_code == status and page.headers["content-type"].startswith("text/html")

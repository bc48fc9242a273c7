"""Two raters on one review queue: a grade posted for a pair another rater graded since the page
was loaded is a 409 that stores nothing; a refused pair's posted values are echoed cut to ~200
characters, never the 2,000 a message may hold."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.webui.review_view import ReviewSource
from webui.fill import SET
from webui.test_review import _client, _first_candidate, _stored, review_source, store_copy

__all__ = ["review_source", "store_copy"]  # the fixtures of the review tests, shared
LONG = "d" * 60_000


@pytest.fixture
def raters(
    store_copy: str, mint_token: Callable[..., str], review_source: ReviewSource
) -> Iterator[tuple[TestClient, TestClient]]:
    """Two editors, ada and bob, each with their own dashboard on the same store."""
    ada = _client(store_copy, mint_token(username="ada", role="user"), review_source)
    bob = _client(store_copy, mint_token(username="bob", role="user"), review_source)
    yield next(ada), next(bob)
    for client in (ada, bob):
        next(client, None)


def test_a_pair_graded_by_another_rater_since_the_page_loaded_is_409(
    raters: tuple[TestClient, TestClient], store_copy: str
) -> None:
    ada, bob = raters
    queue, first = _first_candidate(ada)  # both loaded the queue with this pair open
    _, seen_by_bob = _first_candidate(bob)
    qid, doc = first["question"]["id"], first["candidate"]["document_id"]
    assert (seen_by_bob["question"]["id"], seen_by_bob["candidate"]["document_id"]) == (qid, doc)
    form = {"set": SET, "question_id": qid, "document_id": doc, "csrf_token": queue["csrf_token"]}
    graded = ada.post("/review/judge", data={**form, "grade": "3"}, follow_redirects=False)
    assert graded.status_code == 303
    bob_token = bob.get("/api/review", params={"set": SET}).json()["csrf_token"]
    late = bob.post("/review/judge", data={**form, "grade": "0", "csrf_token": bob_token})
    assert late.status_code == 409
    assert f"is no longer in your review queue of {SET}" in late.text
    assert "reload the queue" in late.text
    assert _stored(store_copy) == [(qid, doc, 3, "ada", "dashboard", "ada")]  # ada's grade only
    # posting again what one already graded (a second click, an old tab) is the same 409
    again = ada.post("/review/judge", data={**form, "grade": "1"})
    assert again.status_code == 409
    assert len(_stored(store_copy)) == 1


@pytest.mark.parametrize("field", ["document_id", "question_id"])
def test_a_long_posted_value_is_echoed_cut_to_about_200_characters(
    raters: tuple[TestClient, TestClient], store_copy: str, field: str
) -> None:
    ada, _ = raters
    queue, first = _first_candidate(ada)
    form = {"set": SET, "question_id": first["question"]["id"], "grade": "1",
            "document_id": first["candidate"]["document_id"], "csrf_token": queue["csrf_token"],
            field: LONG}  # fmt: skip
    answer = ada.post("/review/judge", data=form)
    assert answer.status_code == 400
    shown = sum(len(run) for run in re.findall("d{20,}", answer.text))  # the value, as echoed
    assert 50 < shown <= 200, shown
    assert "no candidate in the review queue" in answer.text
    assert _stored(store_copy) == []

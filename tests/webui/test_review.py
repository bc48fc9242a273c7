"""The review queue: open candidates per question, graded by users Airflow lets edit, through
the dashboard's one write path (POST, CSRF token, edit permission); read-only users see it
without buttons and are refused; nothing is stored by a refused POST."""

from __future__ import annotations

import html as html_lib
import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.webui.review_view import ReviewSource
from webui.fill import BM25, MARKUP, SET, Filled

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "examples" / "retrieval_eval.yaml"


@pytest.fixture(scope="module")
def review_source() -> ReviewSource:
    """One source for the module: the set's lint candidates and texts are built once."""
    return ReviewSource(CONFIG)


@pytest.fixture
def store_copy(filled_sqlite: Filled, tmp_path: Path) -> str:
    """A copy of the filled store each test may write judgments into."""
    path = tmp_path / "results.sqlite"
    shutil.copy(filled_sqlite.url.removeprefix("sqlite:///"), path)
    return f"sqlite:///{path}"


def _client(url: str, token: str, source: ReviewSource) -> Iterator[TestClient]:
    app = create_app(url, config_path=CONFIG)
    app.state.review_source = source
    with TestClient(app, headers={"Authorization": f"Bearer {token}"}) as client:
        yield client
    app.state.store_source.close()


@pytest.fixture
def editor(
    store_copy: str, mint_token: Callable[..., str], review_source: ReviewSource
) -> Iterator[TestClient]:
    yield from _client(store_copy, mint_token(username="ada", role="user"), review_source)


@pytest.fixture
def viewer(
    store_copy: str, mint_token: Callable[..., str], review_source: ReviewSource
) -> Iterator[TestClient]:
    yield from _client(store_copy, mint_token(username="vic", role="viewer"), review_source)


def _stored(url: str) -> list[tuple[str | None, str, int | None, str | None, str, str]]:
    with open_store(url) as store:
        return [
            (s.judgment.question_id, s.judgment.document_id, s.judgment.grade, s.judgment.rater,
             s.channel, s.written_by)
            for s in store.judgments.stored(SET)
        ]  # fmt: skip


def _first_candidate(client: TestClient) -> tuple[dict, dict]:
    queue = client.get("/api/review", params={"set": SET}).json()
    question = queue["questions"][0]
    return queue, {"question": question, "candidate": question["candidates"][0]}


def test_the_queue_pools_the_latest_runs_and_lint_with_texts(editor: TestClient) -> None:
    queue = editor.get("/api/review", params={"set": SET}).json()
    assert queue["retrievers"] == sorted([MARKUP, BM25, "handbook_bm25_top1"])
    assert queue["lint"] == "label_completeness from handbook_bm25's corpus"
    by_id = {q["id"]: q for q in queue["questions"]}
    assert queue["open_questions"] >= len(by_id) > 0 and queue["pages"] >= 1
    for q in by_id.values():  # candidates are never a question's own labels
        assert not {c["document_id"] for c in q["candidates"]} & set(q["labels"])
        assert all(c["text"] for c in q["candidates"])  # the corpus gives every text
    # lint's near-duplicate candidate of the demo (docs/how-to/labels.md: 82% like the Android page)
    everything = [editor.get("/api/review", params={"set": SET, "page": p}).json()
                  for p in range(1, queue["pages"] + 1)]  # fmt: skip
    android = next(q for page in everything for q in page["questions"]
                   if q["id"] == "android-offline-storage")  # fmt: skip
    ios = next(c for c in android["candidates"] if c["document_id"] == "mobile/offline-mode-ios.md")
    assert "label_completeness (82% like mobile/offline-mode-android.md)" in ios["sources"]
    assert queue["can_edit"] is True and queue["rater"] == "ada" and queue["csrf_token"]


def test_a_grade_is_stored_with_who_and_leaves_the_open_queue(
    editor: TestClient, store_copy: str
) -> None:
    queue, first = _first_candidate(editor)
    qid, doc = first["question"]["id"], first["candidate"]["document_id"]
    form = {"set": SET, "question_id": qid, "document_id": doc, "grade": "2",
            "csrf_token": queue["csrf_token"]}  # fmt: skip
    answer = editor.post("/review/judge", data=form, follow_redirects=False)
    assert answer.status_code == 303 and answer.headers["location"].startswith("/review?set=")
    assert _stored(store_copy) == [(qid, doc, 2, "ada", "dashboard", "ada")]
    after = editor.get("/api/review", params={"set": SET}).json()
    assert after["open_candidates"] == queue["open_candidates"] - 1
    still = {(q["id"], c["document_id"]) for q in after["questions"] for c in q["candidates"]}
    assert (qid, doc) not in still
    graded = next((q for q in after["questions"] if q["id"] == qid), None)
    assert graded is None or graded["graded"] == {doc: 2}


def test_a_skip_is_recorded_and_hides_the_candidate_from_its_rater_only(
    editor: TestClient, viewer: TestClient, store_copy: str
) -> None:
    queue, first = _first_candidate(editor)
    qid, doc = first["question"]["id"], first["candidate"]["document_id"]
    form = {"set": SET, "question_id": qid, "document_id": doc, "grade": "skip",
            "csrf_token": queue["csrf_token"]}  # fmt: skip
    assert editor.post("/review/judge", data=form, follow_redirects=False).status_code == 303
    assert _stored(store_copy) == [(qid, doc, None, "ada", "dashboard", "ada")]
    assert editor.get("/api/review", params={"set": SET}).json()["open_candidates"] == (
        queue["open_candidates"] - 1
    )
    assert (
        viewer.get("/api/review", params={"set": SET}).json()["open_candidates"]
        == (queue["open_candidates"])
    )


@pytest.mark.parametrize("token", [None, "", "0" * 64, "wrong"])
def test_a_post_without_the_right_csrf_token_is_403_and_stores_nothing(
    editor: TestClient, store_copy: str, token: str | None
) -> None:
    _, first = _first_candidate(editor)
    form = {"set": SET, "question_id": first["question"]["id"],
            "document_id": first["candidate"]["document_id"], "grade": "1"}  # fmt: skip
    if token is not None:
        form["csrf_token"] = token
    answer = editor.post("/review/judge", data=form, follow_redirects=False)
    assert answer.status_code == 403 and "CSRF token" in answer.text
    assert _stored(store_copy) == []


def test_another_users_token_is_refused(
    editor: TestClient, store_copy: str, mint_token: Callable[..., str],
    review_source: ReviewSource,
) -> None:  # fmt: skip
    queue, first = _first_candidate(editor)
    form = {"set": SET, "question_id": first["question"]["id"],
            "document_id": first["candidate"]["document_id"], "grade": "1",
            "csrf_token": queue["csrf_token"]}  # fmt: skip
    for other in _client(store_copy, mint_token(username="eve", role="user"), review_source):
        assert other.post("/review/judge", data=form).status_code == 403
    assert _stored(store_copy) == []


def test_read_only_users_see_no_buttons_and_their_post_is_403(
    viewer: TestClient, editor: TestClient, store_copy: str
) -> None:
    page = viewer.get("/review", params={"set": SET})
    assert page.status_code == 200 and 'id="read-only"' in page.text
    assert "<form" not in page.text and "csrf_token" not in page.text
    assert viewer.get("/api/review", params={"set": SET}).json()["csrf_token"] is None
    queue, first = _first_candidate(editor)
    form = {"set": SET, "question_id": first["question"]["id"],
            "document_id": first["candidate"]["document_id"], "grade": "3",
            "csrf_token": queue["csrf_token"]}  # fmt: skip
    answer = viewer.post("/review/judge", data=form)
    assert answer.status_code == 403 and "may not edit" in answer.text
    assert _stored(store_copy) == []


def test_only_queue_candidates_are_writable_and_get_is_not_a_write(
    editor: TestClient, store_copy: str
) -> None:
    queue, first = _first_candidate(editor)
    base = {"set": SET, "question_id": first["question"]["id"], "csrf_token": queue["csrf_token"]}
    labelled = first["question"]["labels"][0]
    for bad in ({"document_id": labelled, "grade": "1"},  # a label: no candidate
                {"document_id": "nowhere.md", "grade": "1"},
                {"document_id": first["candidate"]["document_id"], "grade": "4"}):  # fmt: skip
        assert editor.post("/review/judge", data={**base, **bad}).status_code == 400
    assert editor.get("/review/judge", params={**base, "grade": "1"}).status_code == 405
    assert _stored(store_copy) == []


def test_stored_markup_is_escaped_on_the_review_page(editor: TestClient) -> None:
    page = editor.get("/review", params={"set": SET})
    assert page.status_code == 200
    assert MARKUP not in page.text and "<img" not in page.text
    assert html_lib.escape(MARKUP) in page.text or "&#34;&gt;&lt;img" in page.text
    assert "<script" not in page.text.lower()
    token = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', page.text)
    assert token is not None


@pytest.mark.browser
def test_grading_in_headless_chromium_stores_it_and_empties_the_slot(
    store_copy: str,
    browser: object,
    mint_token: Callable[..., str],
    review_source: ReviewSource,
    tmp_path: Path,
) -> None:
    from webui.browsing import serve

    app = create_app(store_copy, config_path=CONFIG)
    app.state.review_source = review_source
    for base in serve(app):
        context = browser.new_context()  # type: ignore[attr-defined]
        context.add_cookies([{"name": "_token", "value": mint_token("ada", "user"), "url": base}])
        page = context.new_page()
        assert page.goto(f"{base}/review?set={SET}").status == 200
        before = int(page.text_content("#open-candidates") or "0")
        row = page.locator("section.review-question").first.locator("tr[data-document-id]").first
        qid = page.locator("section.review-question").first.get_attribute("data-question-id")
        doc = row.get_attribute("data-document-id")
        with page.expect_navigation():
            row.locator("button[value='2']").click()
        assert page.url.startswith(f"{base}/review?set=")  # back on the queue after the POST
        assert int(page.text_content("#open-candidates") or "0") == before - 1
        assert (
            page.locator(f"section[data-question-id='{qid}'] tr[data-document-id='{doc}']").count()
            == 0
        )
        assert _stored(store_copy) == [(qid, doc, 2, "ada", "dashboard", "ada")]
        context.close()
        _promoted_from_the_store(store_copy, tmp_path, qid, doc)
        # a read-only user's browser shows the queue without a button
        context = browser.new_context()  # type: ignore[attr-defined]
        context.add_cookies([{"name": "_token", "value": mint_token("vic"), "url": base}])
        page = context.new_page()
        assert page.goto(f"{base}/review?set={SET}").status == 200
        assert page.locator("#read-only").count() == 1 and page.locator("button").count() == 0
        context.close()
    app.state.store_source.close()


def _promoted_from_the_store(url: str, folder: Path, qid: str, doc: str) -> None:
    """`sets promote --from-store` turns the dashboard's grade into the set's next version."""
    from click.testing import CliRunner

    from retrieval_eval.cli import cli
    from retrieval_eval.golden.loaders import load_golden_set

    target = folder / "handbook-v2.yaml"
    args = ["sets", "promote", SET, "--from-store", "--output", str(target)]
    done = CliRunner().invoke(cli, [*args, "--config", str(CONFIG), "--db", url])
    assert done.exit_code == 0, done.output
    promoted = load_golden_set(target)
    question = next(q for q in promoted.questions if q.id == qid)
    assert doc in question.targets() and question.relevance[doc] == 2
    (entry,) = promoted.changelog[-1:]
    assert promoted.version == entry.version and entry.raters == ("ada",)
    assert entry.added == (f"{qid}: {doc} (grade 2)",)

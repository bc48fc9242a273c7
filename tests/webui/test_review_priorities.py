"""The review queue for several raters (issue 37, item 5): ordered by value (a grade that would
flip a verdict, a model and a person disagree, a model unsure, the rest), open until ``review.raters_per_pair`` people graded a pair
(a model's grade never closes one), graded blind, the raters' agreement and the labels' texts on
the page, grade meanings on the buttons and access keys for the keyboard."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from retrieval_eval.golden.loaders import load_golden_set
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.safety.users import User, hash_password, write_users
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.webui.local_auth import LocalAuth
from retrieval_eval.webui.review_view import ReviewSource, priority
from webui.fill import SET

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
PASSWORD = "a long enough secret"


def test_priority_puts_disagreements_then_unsure_models_first() -> None:
    assert priority({"ann": 0}, {"judge:a": 2}, level=1) == "disagreement"
    assert priority({"ann": 2}, {"judge:a": 3}, level=1) == "open"  # they agree: relevant
    assert priority({}, {"judge:a": 1}, level=1) == "unsure"  # the weakest relevant grade
    assert priority({}, {"judge:a": 0, "judge:b": 2}, level=1) == "unsure"  # judges split
    assert priority({}, {"judge:a": 3}, level=1) == "open"
    assert priority({}, {"judge:a": 2}, level=2) == "unsure"
    assert priority({"ann": 1}, {}, level=1) == "open"


@pytest.fixture(scope="module")
def config_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("review2")
    path = folder / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump({
        "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {"handbook_bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus"),
                                         "chunk_size": 120, "chunk_overlap": 20}},
        "review": {"raters_per_pair": 2},
    }))  # fmt: skip
    return path


@pytest.fixture(scope="module")
def source(config_path: Path) -> ReviewSource:
    return ReviewSource(config_path)


@pytest.fixture
def app(store_copy: str, config_path: Path, source: ReviewSource, tmp_path: Path) -> Iterator[Any]:
    users = tmp_path / "users.yaml"
    write_users(
        users, {name: User(name, "rater", hash_password(PASSWORD)) for name in ("ada", "bob")}
    )
    app = create_app(store_copy, config_path=config_path, local_auth=LocalAuth(users))
    app.state.review_source = source
    yield app
    app.state.store_source.close()


def signed_in(app: Any, name: str) -> TestClient:
    client = TestClient(app)
    answer = client.post("/login", data={"username": name, "password": PASSWORD},
                         follow_redirects=False)  # fmt: skip
    assert answer.status_code == 303
    return client


def queue(client: TestClient) -> dict[str, Any]:
    answer = client.get("/api/review", params={"set": SET})
    assert answer.status_code == 200, answer.text
    return answer.json()  # type: ignore[no-any-return]


def pairs(document: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(q["id"], c["document_id"], c["priority"]) for q in document["questions"]
            for c in q["candidates"]]  # fmt: skip


def add(url: str, *rows: Judgment) -> None:
    with open_store(url) as store:
        store.judgments.add(SET, list(rows), channel="import", written_by="test")


def test_ordered_by_value_open_until_two_people_graded_and_blind(app: Any, store_copy: str) -> None:
    ada, bob = signed_in(app, "ada"), signed_in(app, "bob")
    before = queue(ada)
    assert before["raters_per_pair"] == 2
    assert before["agreement"]["shared_pairs"] == 0
    by_question: dict[str, list[str]] = {}
    flipping = {qid for qid, _, why in pairs(before) if why == "flip"}  # those questions lead
    for qid, doc, _ in pairs(before):
        if qid not in flipping:
            by_question.setdefault(qid, []).append(doc)
    (qa, da), (qb, db), (qc, dc) = [(q, docs[-1]) for q, docs in list(by_question.items())[-3:]]
    add(
        store_copy,
        Judgment(question_id=qa, document_id=da, grade=3, rater="judge:sim"),
        Judgment(question_id=qa, document_id=da, grade=0, rater="cy"),
        Judgment(question_id=qb, document_id=db, grade=1, rater="judge:sim"),
        Judgment(question_id=qc, document_id=dc, grade=2, rater="cy"),
    )
    after = queue(ada)
    listed = pairs(after)
    leading = [q["id"] for q in after["questions"] if q["id"] in flipping]
    assert [q["id"] for q in after["questions"]][: len(leading)] == leading
    rest = [p for p in listed if p[0] not in flipping]
    assert rest[0] == (qa, da, "disagreement")  # from the set's last questions to the top
    assert rest[1][2] == "unsure" and rest[1][:2] == (qb, db)
    questions = [q["id"] for q in after["questions"] if q["id"] not in flipping]
    assert questions[:2] == [qa, qb]
    assert after["open_candidates"] == before["open_candidates"]  # no pair closed yet
    third = next(q for q in after["questions"] if q["id"] == qc)
    candidate = next(c for c in third["candidates"] if c["document_id"] == dc)
    assert candidate["people_graded"] == 1 and dc not in third["graded"]  # cy's 2 stays hidden

    page = ada.get("/review", params={"set": SET})
    assert page.status_code == 200
    token = re.search(r'name="csrf_token" value="([0-9a-f]{64})"', page.text)
    assert token is not None
    assert (
        "1 of 2 people graded" in page.text and "a model judge and a person disagree" in page.text
    )
    # the first candidate's buttons carry the access keys, once each
    assert page.text.count('accesskey="2"') == 1 and page.text.count('accesskey="s"') == 1
    assert ">2 · highly relevant</button>" in page.text
    assert "Current label&#39;s text" in page.text or "Current label's text" in page.text

    form = {"set": SET, "question_id": qc, "document_id": dc, "grade": "1",
            "csrf_token": token.group(1)}  # fmt: skip
    assert ada.post("/review/judge", data=form, follow_redirects=False).status_code == 303
    # two people graded it: it left every queue, and their agreement is measured
    assert (qc, dc) not in {(q, d) for q, d, _ in pairs(queue(bob))}
    assert (qc, dc) not in {(q, d) for q, d, _ in pairs(queue(ada))}
    agreement = queue(bob)["agreement"]
    assert agreement["shared_pairs"] == 1 and agreement["raters"] == ["ada", "cy"]
    # a pair one person graded stays in the others' queues, not in that person's
    graded_once = {"set": SET, "question_id": qa, "document_id": da, "grade": "0",
                   "csrf_token": token.group(1)}  # fmt: skip
    assert ada.post("/review/judge", data=graded_once, follow_redirects=False).status_code == 303
    assert (qa, da) not in {(q, d) for q, d, _ in pairs(queue(ada))}
    with open_store(store_copy) as store:
        raters = [s.judgment.rater for s in store.judgments.stored(SET)]
    assert raters == ["judge:sim", "cy", "judge:sim", "cy", "ada", "ada"]


def test_a_models_grade_never_closes_a_pair(app: Any, store_copy: str) -> None:
    ada = signed_in(app, "ada")
    before = queue(ada)
    qid, doc, _ = pairs(before)[0]
    add(store_copy, Judgment(question_id=qid, document_id=doc, grade=3, rater="judge:sim"))
    after = queue(ada)
    assert after["open_candidates"] == before["open_candidates"]
    assert (qid, doc) in {(q, d) for q, d, _ in pairs(after)}


@pytest.mark.browser
def test_the_keyboard_grades_the_first_candidate_in_headless_chromium(
    app: Any, store_copy: str, browser: Any
) -> None:
    from webui.browsing import serve

    for base in serve(app):
        page = browser.new_context().new_page()
        page.goto(f"{base}/login?next=/review%3Fset%3D{SET}")
        page.fill("input[name=username]", "ada")
        page.fill("input[name=password]", PASSWORD)
        with page.expect_navigation():
            page.click("button[type=submit]")
        assert page.url == f"{base}/review?set={SET}"
        assert page.text_content("#signed-in-as") == "ada (rater)"
        first = page.locator("section.review-question").first
        qid = first.get_attribute("data-question-id")
        doc = first.locator("tr[data-document-id]").first.get_attribute("data-document-id")
        assert page.locator("#shortcuts").count() == 1
        # Alt+3, Chromium's access key on Linux, as a real key event: Playwright's
        # keyboard.press drops the key's text under Alt, and Chromium matches access keys on
        # the unmodified text
        key = {"modifiers": 1, "key": "3", "code": "Digit3", "windowsVirtualKeyCode": 51}
        cdp = page.context.new_cdp_session(page)
        with page.expect_navigation():
            cdp.send(
                "Input.dispatchKeyEvent",
                {"type": "keyDown", "text": "3", "unmodifiedText": "3", **key},
            )
            cdp.send("Input.dispatchKeyEvent", {"type": "keyUp", **key})
        assert page.url.startswith(f"{base}/review?set=")
        with open_store(store_copy) as store:
            rows = [(s.judgment.question_id, s.judgment.document_id, s.judgment.grade,
                     s.judgment.rater) for s in store.judgments.stored(SET)]  # fmt: skip
        assert rows == [(qid, doc, 3, "ada")]
        page.context.close()


def test_pairs_that_would_flip_a_verdict_lead_the_queue(app: Any, store_copy: str) -> None:
    """A pair in a newest run's top k at a gated depth k where no target of the set is, counted
    here from the stored runs' rankings, is marked ``flip`` and its question comes first."""
    with open_store(store_copy) as store:
        newest = {}
        for name in store.runs.retrievers_for(SET):
            valid = [r for r in store.history(SET, name, limit=20, questions=False)
                     if r.status == "valid"]  # fmt: skip
            if valid:
                newest[name] = store.get_run(valid[0].id).result
    golden = load_golden_set(EXAMPLES / "golden" / "handbook.yaml")
    targets = {q.id: set(q.targets()) for q in golden.questions}
    expected: set[tuple[str, str]] = set()
    for result in newest.values():
        assert result.depths  # the demo's runs gate top-1 and top-3
        for q in result.questions:
            for k in result.depths:
                top = q.retrieved[:k]
                if targets.get(q.id) and not targets[q.id] & set(top):  # a miss at k
                    expected.update((q.id, doc) for doc in top)
    first = queue(signed_in(app, "ada"))
    listed = []
    for page in range(1, first["pages"] + 1):
        answer = signed_in(app, "ada").get("/api/review", params={"set": SET, "page": page})
        listed += pairs(answer.json())
    flagged = {(qid, doc) for qid, doc, why in listed if why == "flip"}
    assert flagged and flagged == expected & {(qid, doc) for qid, doc, _ in listed}
    assert len(flagged) < len(listed)  # deeper places, and places below a target, do not flip
    order = [qid for qid, _, _ in listed]
    with_flips = {qid for qid, _ in flagged}
    last_flipping = max(order.index(qid) for qid in with_flips)
    assert all(qid in with_flips for qid in order[: last_flipping + 1])

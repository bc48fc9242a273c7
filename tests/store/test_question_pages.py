"""The run page's listing read a page at a time in SQL gives exactly what sorting the whole run
in memory gives: every filter, every page, flips, stale labels, errors, odd rows, on SQLite and
PostgreSQL; and the run page turns no more question rows into questions than it shows.

The oracle below is the listing's definition (``webui/listing.py``) applied to the run's
questions read whole, as the dashboard did before it paged in SQL.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select, update

from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.golden.models import QuestionForm
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.schema import eval_result
from retrieval_eval.verdicts.regression import Verdict
from retrieval_eval.webui.listing import PER_PAGE, SHOW, ListQuery, list_questions
from store.builders import make_run, pg_schema

N = 130  # three pages
CLASSES = (None, "negation", "numeric", "", "multi-hop")
TO_MISS = ["q007", "q003", "q050", "q003", "nowhere"]  # out of the set's order, a repeat, a stray
TO_HIT = ["q011", "q007", "q090"]  # q007 flipped to miss too: it lists there
STALE = ["q020", "q011", "q021", "q122"]  # q011 flipped: it lists as flipped
DEAD = ["doc-20", "doc-21", "doc-122", "doc-40b"]  # q040 is partly dead


def _question(i: int) -> QuestionResult:
    qid = f"q{i:03d}"
    error = "retriever timed out" if i % 17 == 5 else None
    top3 = error is None and i % 4 != 1
    top1 = top3 and i % 3 != 0
    if i in (33, 66):  # no scorer writes a top-1 hit without a top-3 one; a store may hold it
        top1, top3 = True, False
    expected = [f"doc-{i}", f"doc-{i}b"] if i % 10 == 0 else [f"doc-{i}"]
    return QuestionResult(
        id=qid,
        question=f"question {i}?",
        form=QuestionForm.GAP if i % 3 == 0 else QuestionForm.MATCH,
        hard_class=CLASSES[i % 5],
        expected_document_ids=expected,
        top1_hit=top1,
        top3_hit=top3,
        first_hit_rank=(1 if top1 else 2) if top3 else None,
        retrieved=[] if error else ["x", f"doc-{i}"],
        latency_ms=None if error else 3.0,
        error=error,
    )


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def saved(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Store, int]]:
    if request.param == "sqlite":
        url = f"sqlite:///{tmp_path_factory.mktemp('pages') / 'r.sqlite'}"
        with open_store(url) as store:
            yield store, _save(store)
        return
    with pg_schema(request.getfixturevalue("pg_url")) as url, open_store(url) as store:
        yield store, _save(store)


def _save(store: Store) -> int:
    labels = DeadLabels(
        checked=True,
        source="test",
        dead_ids=DEAD,
        stale_questions=STALE,
        partly_dead={"q040": ["doc-40b"]},
    )
    result = make_run([_question(i) for i in range(N)]).model_copy(update={"dead_labels": labels})
    verdict = Verdict(
        state="regression", is_regression=True, flipped_to_miss=TO_MISS, flipped_to_hit=TO_HIT
    )
    return store.runs.save(result, verdict)


def _oracle(questions: list[QuestionResult], query: ListQuery) -> dict[str, Any]:
    """The listing of ``query`` from the whole run: the definition the SQL must meet."""
    to_miss, to_hit = set(TO_MISS), set(TO_HIT)
    ids = {q.id for q in questions}
    stale = {s for s in STALE if s in ids}
    keeps = {
        "all": lambda q: True,
        "misses": lambda q: not q.top3_hit,
        "top1_misses": lambda q: not q.top1_hit,
        "hits": lambda q: q.top1_hit,
        "errors": lambda q: bool(q.error),
        "flipped": lambda q: q.id in to_miss | to_hit,
        "stale": lambda q: q.id in stale,
    }[query.show]

    def group(q: QuestionResult) -> tuple[int, int]:
        if q.id in to_miss:
            return 0, 0
        if q.id in to_hit:
            return 1, 0
        if q.id in stale:
            return 3, 0
        # a top-1 hit without a top-3 one lists after the other top-3 misses
        return (2, int(q.top1_hit)) if not q.top3_hit else (4, 0) if not q.top1_hit else (5, 0)

    kept = sorted(
        (
            q
            for q in questions
            if keeps(q)
            and query.form in (None, q.form.value)
            and query.hard_class in (None, q.hard_class)
        ),
        key=group,
    )
    start = (query.page - 1) * PER_PAGE
    return {
        "ids": [q.id for q in kept[start : start + PER_PAGE]],
        "matching": len(kept),
        "pages": max(1, math.ceil(len(kept) / PER_PAGE)),
        "total": len(questions),
        "stale_count": len(stale),
        "forms": list(dict.fromkeys(q.form.value for q in questions)),
        "hard_classes": list(dict.fromkeys(q.hard_class for q in questions if q.hard_class)),
    }


def _listed(store: Store, run_id: int, query: ListQuery) -> dict[str, Any]:
    stored = store.get_run(run_id, questions=False)
    shown, listing = list_questions(store, stored, query, TO_MISS, TO_HIT, DEAD)
    return {
        "ids": [q.id for q in shown],
        "matching": listing.matching,
        "pages": listing.pages,
        "total": listing.total,
        "stale_count": listing.stale_count,
        "forms": listing.forms,
        "hard_classes": listing.hard_classes,
    }


def _queries() -> Iterator[ListQuery]:
    for show, form, hard_class in itertools.product(
        SHOW, (None, "match", "gap"), (None, "negation", "multi-hop")
    ):
        yield ListQuery(show=show, form=form, hard_class=hard_class)


def test_every_filter_and_page_lists_what_the_whole_run_sorted_lists(
    saved: tuple[Store, int],
) -> None:
    store, run_id = saved
    questions = store.get_run(run_id).result.questions
    checked = 0
    for query in _queries():
        want = _oracle(questions, query)
        for page in range(1, want["pages"] + 1):
            paged = query.model_copy(update={"page": page})
            assert _listed(store, run_id, paged) == _oracle(questions, paged), paged
            checked += 1
    assert checked > len(SHOW) * 9  # some filters span pages


def test_the_listed_questions_carry_their_stale_and_dead_ids(saved: tuple[Store, int]) -> None:
    store, run_id = saved
    stored = store.get_run(run_id, questions=False)
    shown, _ = list_questions(store, stored, ListQuery(show="all"), TO_MISS, TO_HIT, DEAD)
    pages = [shown]
    for page in (2, 3):
        pages.append(list_questions(store, stored, ListQuery(page=page), TO_MISS, TO_HIT, DEAD)[0])
    by_id = {q.id: q for listed in pages for q in listed}
    assert len(by_id) == N
    assert by_id["q020"].stale_label and by_id["q020"].dead_ids == ["doc-20"]
    assert by_id["q011"].stale_label  # flipped, listed with the flips, still a stale label
    assert not by_id["q040"].stale_label and by_id["q040"].dead_ids == ["doc-40b"]
    assert not by_id["q001"].stale_label and by_id["q001"].dead_ids == []


def test_a_run_stored_without_its_filter_choices_reads_them_from_its_questions(
    saved: tuple[Store, int],
) -> None:
    store, run_id = saved
    with store.engine.begin() as conn:
        details = conn.execute(select(eval_result.c.details).where(eval_result.c.id == run_id))
        kept = dict(details.scalar_one())
        older = {k: v for k, v in kept.items() if k not in ("forms", "hard_classes")}
        conn.execute(update(eval_result).where(eval_result.c.id == run_id).values(details=older))
    try:
        stored = store.get_run(run_id, questions=False)
        assert stored.forms is None and stored.hard_classes is None
        questions = store.get_run(run_id).result.questions
        query = ListQuery(show="misses", form="gap")
        assert _listed(store, run_id, query) == _oracle(questions, query)
    finally:
        with store.engine.begin() as conn:
            conn.execute(update(eval_result).where(eval_result.c.id == run_id).values(details=kept))


def test_the_run_page_makes_questions_of_its_page_and_flips_only(
    saved: tuple[Store, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every question row turned into a question is counted: the page's 50 and the flips',
    of this run and its baseline, never the whole run."""
    from retrieval_eval.store import questions, rows
    from retrieval_eval.webui.views import run_view

    store, run_id = saved
    made: list[str] = []

    def counted(row: Any) -> QuestionResult:
        made.append(row["question_id"])
        return original(row)

    original = rows.question_result
    monkeypatch.setattr(questions, "question_result", counted)
    monkeypatch.setattr(rows, "question_result", counted)
    view = run_view(store, run_id)
    assert len(view.questions) == PER_PAGE
    flipped = {*TO_MISS, *TO_HIT} - {"nowhere"}
    assert len(made) == PER_PAGE + len(flipped), len(made)

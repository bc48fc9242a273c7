"""The run page's question list: misses and flips first, filters, pages, expected ids, and 400s.

The store is ``busy.py``'s (runs of 120 questions); the page and its JSON twin are read through
the app over HTTP (Starlette's test client) and compared with the stored run read here.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.store import StoredRun, open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.webui.listing import PER_PAGE
from webui.busy import NOTHING, QUESTIONS, Busy


@pytest.fixture(scope="module")
def client(busy_sqlite: Busy) -> Iterator[TestClient]:
    app = create_app(busy_sqlite.url, require_auth=False)
    with TestClient(app) as test_client:
        yield test_client
    app.state.store_source.close()


def _stored(busy: Busy, run_id: int) -> StoredRun:
    with open_store(busy.url) as store:
        return store.get_run(run_id)


def _rows(html: str) -> list[str]:
    return re.findall(r'<tr data-question-id="([^"]+)"', html)


def test_flipped_and_missed_questions_come_first_then_the_hits(
    client: TestClient, busy_sqlite: Busy
) -> None:
    run = _stored(busy_sqlite, busy_sqlite.regression)
    verdict = run.verdict
    assert verdict is not None and verdict.flipped_to_miss
    listed: list[dict[str, Any]] = []
    for page in (1, 2, 3):
        data = client.get(f"/api/runs/{run.id}", params={"page": page}).json()
        assert data["listing"]["pages"] == 3 and data["listing"]["page"] == page
        listed += data["questions"]
    assert len(listed) == QUESTIONS == len({q["id"] for q in listed})
    flipped = set(verdict.flipped_to_miss) | set(verdict.top3_flipped_to_miss)
    first = [q["id"] for q in listed[: len(flipped)]]
    assert set(first) == flipped
    misses = [q for q in listed[len(flipped) :] if not q["top3_hit"]]
    assert listed[len(flipped) : len(flipped) + len(misses)] == misses  # then the other misses
    assert all(q["top1_hit"] for q in listed[-10:])  # the hits last
    # the HTML page lists the same first page in the same order
    html = client.get(f"/runs/{run.id}").text
    assert _rows(html) == [q["id"] for q in listed[:PER_PAGE]]
    shown = [qid for qid in _rows(html) if qid in flipped]
    assert html.count("top-1 hit → miss</span>") == len(set(verdict.flipped_to_miss) & set(shown))
    assert html.count("top-3 hit → miss</span>") == len(
        set(verdict.top3_flipped_to_miss) & set(shown)
    )


@pytest.mark.parametrize(
    ("params", "keeps"),
    [
        ({"show": "misses"}, lambda q: not q.top3_hit),
        ({"show": "top1_misses"}, lambda q: not q.top1_hit),
        ({"show": "hits"}, lambda q: q.top1_hit),
        ({"show": "errors"}, lambda q: bool(q.error)),
        ({"form": "gap"}, lambda q: q.form.value == "gap"),
        ({"hard_class": "negation"}, lambda q: q.hard_class == "negation"),
        (
            {"show": "misses", "form": "match", "hard_class": "numeric"},
            lambda q: not q.top3_hit and q.form.value == "match" and q.hard_class == "numeric",
        ),
    ],
    ids=lambda value: (
        "-".join(f"{k}={v}" for k, v in value.items()) if isinstance(value, dict) else ""
    ),
)
def test_filters_keep_exactly_the_matching_questions_in_html_and_json(
    client: TestClient, busy_sqlite: Busy, params: dict[str, str], keeps: Any
) -> None:
    run_id = busy_sqlite.invalid  # the run with errors, misses and hits
    expected = {q.id for q in _stored(busy_sqlite, run_id).result.questions if keeps(q)}
    assert 0 < len(expected) < QUESTIONS  # a filter that changes something
    got: set[str] = set()
    data = client.get(f"/api/runs/{run_id}", params=params).json()
    for page in range(1, data["listing"]["pages"] + 1):
        data = client.get(f"/api/runs/{run_id}", params={**params, "page": page}).json()
        got |= {q["id"] for q in data["questions"]}
        html = client.get(f"/runs/{run_id}", params={**params, "page": page}).text
        assert set(_rows(html)) == {q["id"] for q in data["questions"]}
    assert got == expected
    assert data["listing"]["matching"] == len(expected)


def test_pages_link_to_each_other_keeping_the_filters(
    client: TestClient, busy_sqlite: Busy
) -> None:
    run_id = busy_sqlite.regression
    html = client.get(f"/runs/{run_id}", params={"form": "match", "page": 2}).text
    matching = sum(1 for q in _stored(busy_sqlite, run_id).result.questions if q.form == "match")
    pages = -(-matching // PER_PAGE)
    assert pages == 2 and len(_rows(html)) == matching - PER_PAGE
    pager = re.search(r'<nav class="pager".*?</nav>', html, flags=re.S)
    assert pager is not None
    links = re.findall(r'href="([^"]*)"', pager.group(0))
    assert len(links) == 2 and all("form=match" in link for link in links)  # ‹ previous and 1
    assert f'/runs/{run_id}?form=match"' in html  # page 1 is the address without page=
    assert '<strong aria-current="page">2</strong>' in html
    assert 'rel="prev"' in html and 'rel="next"' not in html
    # the filter form comes back with the current choice selected
    assert '<option value="match" selected>' in html


@pytest.mark.parametrize(
    ("params", "status", "message"),
    [
        ({"page": "0"}, 400, "bad request: page"),
        ({"page": "two"}, 400, "bad request: page"),
        ({"show": "everything"}, 400, "bad request: show"),
        ({"form": "haiku"}, 400, "bad request: form"),
        # well-formed, but nothing of this run: not found, naming what there is
        ({"page": "4"}, 404, "page=4 is past the last page, 3"),
        ({"show": "errors", "page": "2"}, 404, "page=2 is past the last page, 1 (0 matching"),
        ({"hard_class": "sarcasm"}, 404, "its values: 'negation', 'numeric', 'multi-hop'"),
    ],
)
def test_bad_list_parameters_are_refused_naming_the_parameter(
    client: TestClient, busy_sqlite: Busy, params: dict[str, str], status: int, message: str
) -> None:
    for path in (f"/runs/{busy_sqlite.regression}", f"/api/runs/{busy_sqlite.regression}"):
        response = client.get(path, params=params)
        assert response.status_code == status, (path, response.text[:300])
        detail = (
            response.json()["detail"] if "/api/" in path else re.sub(r"<[^>]+>", "", response.text)
        )
        assert message in detail.replace("&#39;", "'"), detail


def test_the_schema_patterns_name_exactly_the_filters() -> None:
    """routes.py spells the choices out (importing them would slow every Airflow process)."""
    from retrieval_eval.golden.models import QuestionForm
    from retrieval_eval.webui import routes
    from retrieval_eval.webui.listing import SHOW

    assert f"^({'|'.join(SHOW)})$" == routes.SHOW_PATTERN
    assert f"^(|{'|'.join(form.value for form in QuestionForm)})$" == routes.FORM_PATTERN


def test_the_any_choice_of_the_filter_form_is_no_filter(
    client: TestClient, busy_sqlite: Busy
) -> None:
    html = client.get(f"/runs/{busy_sqlite.regression}", params={"form": "", "hard_class": ""})
    assert html.status_code == 200
    assert f"({QUESTIONS} of {QUESTIONS} questions" in html.text


def test_misses_show_the_expected_ids_marked_and_hits_in_bold(
    client: TestClient, busy_sqlite: Busy
) -> None:
    run = _stored(busy_sqlite, busy_sqlite.regression)
    html = client.get(f"/runs/{run.id}", params={"show": "all", "page": 3}).text
    rows = dict(re.findall(r'<tr data-question-id="([^"]+)".*?>(.*?)</tr>', html, flags=re.S))
    by_id = {q.id: q for q in run.result.questions}
    seen_miss = seen_hit = False
    for qid, row in rows.items():
        q = by_id[qid]
        for expected in q.expected_document_ids:
            if expected in q.retrieved:
                assert f'<b class="hit">{expected}</b>' in row  # in the retrieved list
                assert f'<span class="found">{expected}</span>' in row
                seen_hit = True
            else:
                assert f'<s class="missing" title="not retrieved">{expected}</s>' in row
                assert "not retrieved</span>" in row
                seen_miss = True
    assert seen_hit and seen_miss  # page 3 holds both kinds (rank-2 hits, two-id questions)
    only = {"show": "misses", "hard_class": "multi-hop"}  # one page, with the last question
    nothing = client.get(f"/runs/{run.id}", params=only).text
    row = re.search(rf'<tr data-question-id="{NOTHING}".*?</tr>', nothing, flags=re.S)
    assert row is not None and "nothing answers (no expected id)" in row.group(0)


def test_a_flipped_row_shows_retrieved_and_expected_ids_and_its_baseline_rank(
    client: TestClient, busy_sqlite: Busy
) -> None:
    data = client.get(f"/api/runs/{busy_sqlite.regression}").json()
    flip = data["flips"]["top1_to_miss"][0]
    assert flip["expected_document_ids"] and flip["retrieved"]
    assert not set(flip["expected_document_ids"]) & set(flip["retrieved"][:1])
    html = client.get(f"/runs/{busy_sqlite.regression}").text
    row = re.search(rf'<tr data-question-id="{flip["id"]}"[^>]*>(.*?)</tr>', html, flags=re.S)
    assert row is not None and 'data-flips="top1_to_miss' in row.group(0)
    assert (
        f'<s class="missing" title="not retrieved">{flip["expected_document_ids"][0]}</s>'
        in row.group(1)
    )
    was = flip["baseline_first_hit_rank"] or "–"
    assert f'title="its first hit rank in the baseline run">(baseline {was})</span>' in row.group(1)


def test_the_counts_read_from_the_run_are_the_stores(busy_sqlite: Busy) -> None:
    """Every outcome filter the page counts from the run's stored figures (hits, errors, slices)
    gives the count the store's own query gives, on a regressed run and an invalid one."""
    from itertools import product

    from retrieval_eval.store.questions import QuestionFilter, stored_count

    checked = 0
    with open_store(busy_sqlite.url) as store:
        for run_id in (busy_sqlite.regression, busy_sqlite.invalid):
            stored = store.get_run(run_id, questions=False)
            forms = [None, *stored.result.by_form, "absent"]
            classes = [None, *stored.result.by_hard_class]
            outcomes = [{}, {"top1_hit": True}, {"top1_hit": False}, {"top3_hit": False}]
            for form, hard_class, outcome, errors in product(
                forms, classes, outcomes, (False, True)
            ):
                where = QuestionFilter(**outcome, errors=errors, form=form, hard_class=hard_class)
                known = stored_count(stored, where)
                if known is not None:
                    other = stored.model_copy(update={"grader": "another"})  # counted in SQL
                    assert known == store.questions.count(other, where), where
                    checked += 1
    assert checked > 20

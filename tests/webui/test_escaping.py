"""Every stored string is inert on every dashboard page and verbatim in every JSON answer.

One store holds a run with flips, an errored question, a stale label (its only target gone from
the index, as the run's dead-label check recorded) and slices, plus its baseline and a second
retriever to compare with, and EVERY stored string in it carries markup: a payload of its own per
field (the field's name is inside it), so a failure names the field that leaked. Each page, HTML
or JSON, lists the fields it shows. An HTML page must show each of them in its escaped form only
and never any field's raw markup; a JSON answer must hold each of them as the raw string,
JSON-encoded (not HTML-escaped). The payloads use both quote kinds, so attribute values are
covered as well as text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from markupsafe import escape
from store.builders import make_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.golden.models import QuestionForm
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.webui.app import create_app


def _script(name: str) -> str:
    return f'<script>alert("{name}")</script>'


def _attribute(name: str) -> str:
    return f"\"'><img src=x onerror=alert('{name}')>"


PAYLOADS = {
    # the set name: double quotes only, so the 404 message's repr() keeps it verbatim
    "set": _script("set"),
    "retriever": _attribute("retriever"),
    "set_name": _script("set_name"),
    "corpus_revision": _attribute("corpus_revision"),
    "labels_fingerprint": "'\"><b>fp</b>",  # 12 characters: the run page shows the first 12
    "run_key": _attribute("run_key"),
    "question_id": _attribute("question_id"),
    "question": _script("question"),
    "hard_class": _attribute("hard_class"),
    "expected_id": _script("expected_id"),
    "retrieved_id": _attribute("retrieved_id"),
    "error": _script("error"),
    "dead_id": _script("dead_id"),  # the stale question's only target, gone from the index
    "labels_source": _attribute("labels_source"),  # how the check looked ids up (its summary)
    "verdict_summary": _attribute("verdict_summary"),
    "verdict_reason": _script("verdict_reason"),
    "filter": _script("filter"),  # never stored: a query parameter echoed in an error
}
P = PAYLOADS
OTHER = "plain_retriever"  # the retriever compared with (no markup: the other side is enough)


def _question(
    qid: str, text: str, expected: str, retrieved: list[str], **kwargs: Any
) -> QuestionResult:
    rank = retrieved.index(expected) + 1 if expected in retrieved else None
    return QuestionResult(
        id=qid,
        question=text,
        form=QuestionForm.MATCH,
        expected_document_ids=[expected],
        top1_hit=rank == 1,
        top3_hit=rank is not None and rank <= 3,
        first_hit_rank=rank,
        retrieved=retrieved,
        **kwargs,
    )


def _questions(
    marked: list[str], plain: list[str], errored: list[str] | None
) -> list[QuestionResult]:
    """The four questions of every run: the marked one, a plain one, one that may error and one
    whose target is gone (a stale label in the run whose check found it)."""
    error = P["error"] if errored is None else None
    return [
        _question(
            P["question_id"], P["question"], P["expected_id"], marked, hard_class=P["hard_class"]
        ),
        # the same hard class: a filter on it keeps two questions (page links, see below)
        _question(
            "q-plain", "a plain question", P["expected_id"], plain, hard_class=P["hard_class"]
        ),
        _question("q-error", "a question that errored", "doc-e", errored or [], error=error),
        _question("q-stale", "a question whose target is gone", P["dead_id"], []),
    ]


def _replays(store: Any) -> int:
    """A replay series whose sample, retriever, query, ids and index version carry markup: the
    sample is named by the set's payload, the index version by the corpus revision's."""
    from datetime import UTC, datetime, timedelta

    from retrieval_eval.replay.record import Ranking, ReplayRecord
    from retrieval_eval.replay.samples import QuerySample, SampledQuery

    sample = QuerySample(P["set"], "plain", (SampledQuery("k1", P["question"], 5, "head"),), 1, 5)
    sample_id = store.replays.save_sample(sample)
    first = [Ranking("k1", (P["expected_id"], P["retrieved_id"]))]
    moved = [Ranking("k1", (P["retrieved_id"], "doc-z"))]
    ids = []
    for day, rows, before in ((0, first, None), (1, moved, first)):
        ids.append(
            store.replays.save(
                ReplayRecord.of_sample(
                    sample,
                    run_key=f"replay-{day}",
                    sample_id=sample_id,
                    retriever=P["retriever"],
                    k=10,
                    p=0.9,
                    started_at=datetime.now(UTC) - timedelta(days=1 - day),
                    rankings=rows,
                    before=before,
                    compared_id=ids[0] if ids else None,  # against: "replay N", as compared
                    index_version=P["corpus_revision"],
                ),
            )
        )
    return ids[-1]


@dataclass
class Dashboard:
    client: TestClient
    ids: dict[str, int] = field(default_factory=dict)


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    url = f"sqlite:///{tmp_path_factory.mktemp('escaping') / 'results.sqlite'}"
    common = {
        "set_identifier": P["set"],
        "fingerprint": P["labels_fingerprint"],
        "set_name": P["set_name"],
        "corpus_revision": P["corpus_revision"],
        "max_error_rate": 0.5,  # one error in three questions keeps the run valid (compared)
    }
    thresholds = Thresholds()
    base = make_run(
        _questions([P["expected_id"], P["retrieved_id"]], [P["expected_id"]], ["doc-e"]),
        retriever=P["retriever"],
        day=0,
        **common,
    )
    current = make_run(
        _questions(
            [P["retrieved_id"], "doc-b", "doc-c"], [P["expected_id"], P["retrieved_id"]], None
        ),
        retriever=P["retriever"],
        day=1,
        run_key=P["run_key"],
        **common,
    )
    dead = DeadLabels(
        checked=True,
        source=P["labels_source"],
        dead_ids=[P["dead_id"]],
        stale_questions=["q-stale"],
    )
    current = current.model_copy(update={"dead_labels": dead})
    other = make_run(
        _questions([P["expected_id"]], ["doc-x"], ["doc-e"]), retriever=OTHER, day=1, **common
    )
    with open_store(url) as store:
        base_id = store.runs.save(base, detect_regression(base, None, thresholds))
        verdict = detect_regression(current, store.get_run(base_id), thresholds)
        # the flips table and the errored row must be on the run page for the test to mean much
        assert verdict.state == "regression"
        assert verdict.flipped_to_miss == [P["question_id"], "q-error"]
        assert verdict.stale_questions == ["q-stale"] and verdict.dead_ids == [P["dead_id"]]
        verdict = verdict.model_copy(
            update={"summary": P["verdict_summary"], "reasons": [P["verdict_reason"]]}
        )
        current_id = store.runs.save(current, verdict)
        store.runs.save(other, detect_regression(other, None, thresholds))
        replay_id = _replays(store)
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        yield Dashboard(client, {"base": base_id, "current": current_id, "replay": replay_id})
    app.state.store_source.close()


@dataclass(frozen=True)
class Page:
    name: str
    path: str  # ``{current}`` and ``{base}`` stand for those runs' ids
    params: dict[str, str | list[str]]
    fields: tuple[str, ...]  # the payloads this page must show
    status: int = 200

    @property
    def is_json(self) -> bool:
        return self.path.startswith("/api/")


PAIR = {"set": P["set"], "retriever": P["retriever"]}
SUMMARY_FIELDS = ("set", "retriever", "labels_fingerprint", "corpus_revision", "verdict_summary")
QUESTION_FIELDS = ("question_id", "question", "hard_class", "expected_id", "retrieved_id")
RUN_FIELDS = ("set", "retriever", "set_name", "corpus_revision", "labels_fingerprint")
STALE_FIELDS = ("dead_id", "labels_source")  # the stale marker's dead id and the labels line
CURRENT_FIELDS = (
    *RUN_FIELDS,
    "run_key",
    *QUESTION_FIELDS,
    "error",
    "verdict_summary",
    *STALE_FIELDS,
)
COMPARE = {"set": P["set"], "a": P["retriever"], "b": OTHER}
COMPARE_R = {"set": P["set"], "r": [OTHER, P["retriever"]], "reference": P["retriever"]}
BOARD_FIELDS = ("set", "retriever", "labels_fingerprint")  # what a leaderboard entry names
UNKNOWN_PAIR = {"set": P["set"], "retriever": "nobody"}
# the run page's filters, echoed back in the filter form, the count line and the page links
FILTERED = {"show": "misses", "hard_class": P["hard_class"]}
FILTERED_FIELDS = (*RUN_FIELDS, "question_id", "question", "hard_class", "expected_id")
NO_SUCH = {"hard_class": P["filter"]}  # echoed in the 404's message
REPLAYED = {"sample": P["set"], "retriever": P["retriever"]}
REPLAY_FIELDS = ("set", "retriever", "question", "expected_id", "retrieved_id", "corpus_revision")
PAGES = [
    Page("overview", "/", {}, ("set", "retriever")),
    Page("overview-json", "/api/overview", {}, SUMMARY_FIELDS),
    Page("history", "/history", PAIR, ("set", "retriever")),
    Page(
        "history-by-hard-class",
        "/history",
        {**PAIR, "dim": "hard_class"},
        ("set", "retriever", "hard_class"),
    ),
    Page("history-json", "/api/history", PAIR, (*SUMMARY_FIELDS, "hard_class")),
    Page("run", "/runs/{current}", {}, CURRENT_FIELDS),
    Page(
        "run-errors-only",
        "/runs/{current}",
        {"show": "errors"},
        # the flipped question is listed with the questions only (once), not above the filter
        (*RUN_FIELDS, "error"),
    ),
    Page("run-json", "/api/runs/{current}", {}, (*CURRENT_FIELDS, "verdict_reason")),
    Page("run-stale-only", "/runs/{current}", {"show": "stale"}, (*RUN_FIELDS, *STALE_FIELDS)),
    Page(
        "run-stale-only-json",
        "/api/runs/{current}",
        {"show": "stale"},
        (*RUN_FIELDS, *STALE_FIELDS),
    ),
    Page("baseline-run", "/runs/{base}", {}, (*RUN_FIELDS, *QUESTION_FIELDS)),
    Page("baseline-run-json", "/api/runs/{base}", {}, (*RUN_FIELDS, *QUESTION_FIELDS)),
    Page("compare", "/compare", COMPARE, ("set", "retriever", *QUESTION_FIELDS, "error")),
    Page("compare-json", "/api/compare", COMPARE, (*BOARD_FIELDS, *QUESTION_FIELDS, "error")),
    # the N-retriever form, the marked retriever named as the reference (in the form's select)
    Page("compare-r", "/compare", COMPARE_R, ("set", "retriever", *QUESTION_FIELDS, "error")),
    Page("compare-r-json", "/api/compare", COMPARE_R, (*BOARD_FIELDS, *QUESTION_FIELDS)),
    Page("run-filtered", "/runs/{current}", FILTERED, FILTERED_FIELDS),
    Page("run-filtered-json", "/api/runs/{current}", FILTERED, FILTERED_FIELDS),
    Page("run-no-such-filter", "/runs/{current}", NO_SUCH, ("filter",), status=404),
    Page("run-no-such-filter-json", "/api/runs/{current}", NO_SUCH, ("filter",), status=404),
    Page("drift", "/drift", REPLAYED, ("set", "retriever", "corpus_revision")),
    Page("drift-json", "/api/drift", REPLAYED, ("corpus_revision",)),
    Page("replay", "/replays/{replay}", {}, REPLAY_FIELDS),
    Page("replay-json", "/api/replays/{replay}", {}, REPLAY_FIELDS),
    Page("not-found", "/history", UNKNOWN_PAIR, ("set",), status=404),
    Page("not-found-json", "/api/history", UNKNOWN_PAIR, ("set",), status=404),
    # a set no config holds (set identifiers cannot carry markup): its name echoed in the 404;
    # the queue's stored strings are checked in test_review.py
    Page("review-unknown-set", "/review", {"set": P["set"]}, ("set",), status=404),
    Page("review-unknown-set-json", "/api/review", {"set": P["set"]}, ("set",), status=404),
]


def _strings(value: Any) -> Iterator[str]:
    """Every string in a JSON document, object keys included (slice values are keys)."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, str):
        yield value


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_stored_string_is_escaped_in_html_and_verbatim_in_json(
    dashboard: Dashboard, page: Page
) -> None:
    response = dashboard.client.get(page.path.format(**dashboard.ids), params=page.params)
    assert response.status_code == page.status, response.text[:500]
    text = response.text
    if page.is_json:
        assert response.headers["content-type"] == "application/json"
        strings = list(_strings(response.json()))
        missing = [f for f in page.fields if not any(P[f] in s for s in strings)]
        assert missing == [], f"{page.name}: these fields are not in the JSON verbatim"
        # the raw string, JSON-encoded: neither HTML-escaped nor \u-escaped
        encoded = [f for f in page.fields if json.dumps(P[f], ensure_ascii=False)[1:-1] not in text]
        assert encoded == [], f"{page.name}: these fields are not plainly JSON-encoded"
        html_escaped = [f for f in PAYLOADS if str(escape(P[f])) in text]
        assert html_escaped == [], f"{page.name}: these fields are HTML-escaped inside JSON"
        return
    assert response.headers["content-type"].startswith("text/html")
    # a long id gets a line-break opportunity after each "/" (pages.breakable): not a character
    text = text.replace("/<wbr>", "/")
    leaked = [f for f in PAYLOADS if P[f] in text]
    assert leaked == [], f"{page.name}: these fields reach the HTML unescaped"
    assert "<script" not in text.lower() and "<img" not in text.lower()
    assert "<b>fp" not in text
    shown = [f for f in page.fields if str(escape(P[f])) in text]
    assert shown == list(page.fields), f"{page.name}: fields missing in their escaped form"


def test_the_payloads_are_told_apart() -> None:
    """No payload contains another, so a leak names exactly one field."""
    for name, payload in PAYLOADS.items():
        others = [other for other, value in PAYLOADS.items() if other != name and value in payload]
        assert others == [], name


def test_every_route_of_the_app_is_checked(tmp_path: Path) -> None:
    """A page added to the app must be added to PAGES too, its JSON twin as well (the one
    POST, /review/judge, answers a redirect, not a page: test_review.py checks it)."""
    app = create_app(f"sqlite:///{tmp_path / 'unused.sqlite'}", require_auth=False)
    routes = {
        getattr(route, "path", "")
        for route in app.routes
        if "POST" not in getattr(route, "methods", ())
    }
    checked = {
        page.path.replace("{current}", "{run_id}")
        .replace("{base}", "{run_id}")
        .replace("{replay}", "{replay_id}")
        for page in PAGES
    }
    assert routes == checked


def test_page_links_carry_the_filters_escaped(
    dashboard: Dashboard, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One question a page, so the two questions of the marked hard class need page links."""
    monkeypatch.setattr("retrieval_eval.webui.listing.PER_PAGE", 1)
    path = f"/runs/{dashboard.ids['current']}"
    response = dashboard.client.get(path, params={"hard_class": P["hard_class"]})
    assert response.status_code == 200
    text = response.text
    pager = text[text.index('<nav class="pager"') :]
    pager = pager[: pager.index("</nav>")]
    assert 'rel="next"' in pager
    # the link's query string holds the URL-encoded value, then HTML-escaped in the attribute
    assert "hard_class=%22%27%3E%3Cimg" in pager
    assert P["hard_class"] not in text and "<img" not in text.lower()
    # following the link shows page 2 with the filter kept
    link = pager[pager.index('rel="next" href="') + len('rel="next" href="') :]
    link = link[: link.index('"')].replace("&amp;", "&")
    second = dashboard.client.get(link)
    assert second.status_code == 200 and "page 2 of 2" in second.text


def test_ids_are_escaped_whether_short_or_broken_after_each_slash() -> None:
    """pages.breakable writes every id on the run and compare pages: a short one whole, a long
    one with a <wbr> after each "/"; both escaped."""
    from retrieval_eval.webui.pages import breakable

    assert str(breakable("<b>a</b>")) == "&lt;b&gt;a&lt;/b&gt;"  # 8 characters: whole
    long = '<img src=x onerror="alert(1)">/x'
    assert str(breakable(long)) == "&lt;img src=x onerror=&#34;alert(1)&#34;&gt;/<wbr>x"

"""The run page's question list: misses and flips first, filtered, one page at a time.

The run page and its JSON twin (``/runs/{id}`` and ``/api/runs/{id}``) take the same query
parameters, so a filtered page is a link anyone can share and works without JavaScript:

- ``show``: ``all`` (default), ``misses`` (top-3 misses), ``top1_misses``, ``hits`` (top-1
  hits), ``errors`` (the retriever failed), ``flipped`` (changed outcome against the baseline)
  or ``stale`` (stale labels: every target gone from the index, see :mod:`retrieval_eval.evaluation.labels`);
- ``form`` and ``hard_class``: one value each, among those the run's questions have;
- ``page``: 1-based, :data:`PER_PAGE` questions a page.

Order: questions that flipped to a miss against the baseline, then those that flipped to a hit,
then the other top-3 misses, then the stale labels, then the other top-1 misses (hit at rank 2 or
3), then the hits; within each group the set's order. A reader looking for what went wrong finds
it on page one, and a miss no retriever could have avoided sorts after the retrieval misses.

Each listed question is a :class:`ListedQuestion`: a stale label (the stored run's dead-label
check found every target gone) carries ``stale_label`` and its ``dead_ids``, so neither the page
nor its JSON twin shows it as an ordinary miss. A partly dead question (some targets gone, some
left) is judged as usual and not a stale label, but its ``dead_ids`` name the gone ones too, so
the page flags each "no longer in the index" rather than "not retrieved". It still counts in the run's figures and in the
``misses`` filter (it is a miss there too), as in every report.

Edge cases: a malformed value (``show`` or ``form`` not among the choices, a page that is not a
whole number from 1) is a 400 from the app's parameter checks (and InvalidInputError here, for
callers other than the app). A well-formed value that names nothing in this run, a form or hard
class none of its questions has or a page past the last, is UnknownNameError: a 404 naming the
parameter and the run's values, as an unknown run or retriever is. A filter that matches nothing
is one empty page, not an error.
A run without flips (first run, invalid, not comparable) orders misses first. A run whose labels
were not checked (or were checked clean) has no stale labels: ``show=stale`` is an empty page.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from pydantic import BaseModel, Field

from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.results import QuestionResult

PER_PAGE = 50
SHOW = {
    "all": "all",
    "misses": "top-3 misses",
    "top1_misses": "top-1 misses",
    "hits": "top-1 hits",
    "errors": "errors",
    "flipped": "flipped",
    "stale": "stale labels",
}


class ListedQuestion(QuestionResult):
    """A question as the run page lists it; a stale label says so and names its dead ids."""

    stale_label: bool = False
    dead_ids: list[str] = Field(default_factory=list)


class ListQuery(BaseModel):
    """What the reader asked for (the query parameters, not yet checked against the run)."""

    show: str = "all"
    form: str | None = None
    hard_class: str | None = None
    page: int = 1


class Listing(BaseModel):
    """The page of questions shown, with what is needed to draw the filters and page links."""

    show: str
    form: str | None
    hard_class: str | None
    page: int
    pages: int  # at least 1, even when nothing matches
    per_page: int
    matching: int  # questions that pass the filters, over all pages
    total: int  # questions in the run
    forms: list[str]  # the choices, in the set's order
    hard_classes: list[str]
    stale_count: int = 0  # stale-label questions in the run (the filter is offered when any)
    flipped_to_miss: list[str] = Field(default_factory=list)  # question ids
    flipped_to_hit: list[str] = Field(default_factory=list)

    def params(self, **changes: Any) -> dict[str, Any]:
        """The query parameters of this listing with ``changes``, defaults left out (links)."""
        current: dict[str, Any] = {
            "show": self.show,
            "form": self.form,
            "hard_class": self.hard_class,
            "page": self.page,
        }
        current.update(changes)
        defaults = {"show": "all", "page": 1}
        return {k: v for k, v in current.items() if v is not None and defaults.get(k) != v}

    def page_numbers(self) -> list[int | None]:
        """The page links to show: first, last and two either side of this one (None: a gap)."""
        wanted = {1, self.pages, *range(self.page - 2, self.page + 3)}
        shown: list[int | None] = []
        for number in sorted(n for n in wanted if 1 <= n <= self.pages):
            if shown and shown[-1] is not None and number - shown[-1] > 1:
                shown.append(None)
            shown.append(number)
        return shown


def _choices(questions: list[QuestionResult]) -> tuple[list[str], list[str]]:
    forms: dict[str, None] = {}
    classes: dict[str, None] = {}
    for q in questions:
        forms[q.form.value] = None
        if q.hard_class:
            classes[q.hard_class] = None
    return list(forms), list(classes)


def _check(query: ListQuery, run_id: int, forms: list[str], classes: list[str]) -> None:
    if query.show not in SHOW:
        raise InvalidInputError(
            f"show={query.show!r} is not a filter; use one of: {', '.join(SHOW)}"
        )
    for name, value, known in (
        ("form", query.form, forms),
        ("hard_class", query.hard_class, classes),
    ):
        if value is not None and value not in known:
            choices = ", ".join(repr(k) for k in known) or "none"
            raise UnknownNameError(
                f"{name}={value!r}: no question of run {run_id} has it; its values: {choices}"
            )


def _keeps(q: QuestionResult, show: str, flipped: set[str], stale: dict[str, list[str]]) -> bool:
    return {
        "all": True,
        "misses": not q.top3_hit,
        "top1_misses": not q.top1_hit,
        "hits": q.top1_hit,
        "errors": bool(q.error),
        "flipped": q.id in flipped,
        "stale": q.id in stale,
    }[show]


def list_questions(
    run_id: int,
    questions: list[QuestionResult],
    query: ListQuery,
    flipped_to_miss: list[str],
    flipped_to_hit: list[str],
    stale: dict[str, list[str]] | None = None,
    dead: Collection[str] = (),
) -> tuple[list[ListedQuestion], Listing]:
    """The questions of ``query``'s page, in the order above, and the listing that drew it.

    ``stale``: the run's stale labels, question id -> dead ids (:meth:`RunResult.stale_targets`);
    ``dead``: every dead id the run's check found (stale and partly dead questions alike).
    """
    stale = stale or {}
    gone = set(dead)
    forms, classes = _choices(questions)
    _check(query, run_id, forms, classes)
    to_miss, to_hit = set(flipped_to_miss), set(flipped_to_hit)

    def group(q: QuestionResult) -> int:
        if q.id in to_miss:
            return 0
        if q.id in to_hit:
            return 1
        if q.id in stale:
            return 3
        return 2 if not q.top3_hit else 4 if not q.top1_hit else 5

    kept = [
        q
        for q in questions
        if _keeps(q, query.show, to_miss | to_hit, stale)
        and query.form in (None, q.form.value)
        and query.hard_class in (None, q.hard_class)
    ]
    kept = sorted(kept, key=group)  # stable: the set's order within a group
    pages = max(1, math.ceil(len(kept) / PER_PAGE))
    if query.page > pages:
        raise UnknownNameError(
            f"page={query.page} is past the last page, {pages} "
            f"({len(kept)} matching questions, {PER_PAGE} a page)"
        )
    start = (query.page - 1) * PER_PAGE
    listing = Listing(
        show=query.show,
        form=query.form,
        hard_class=query.hard_class,
        page=query.page,
        pages=pages,
        per_page=PER_PAGE,
        matching=len(kept),
        total=len(questions),
        forms=forms,
        hard_classes=classes,
        stale_count=len(stale),
        flipped_to_miss=flipped_to_miss,
        flipped_to_hit=flipped_to_hit,
    )
    shown = [
        ListedQuestion(
            **dict(q),
            stale_label=q.id in stale,
            dead_ids=stale.get(q.id) or [d for d in q.expected_document_ids if d in gone],
        )
        for q in kept[start : start + PER_PAGE]
    ]
    return shown, listing

"""The run page's question list: misses and flips first, filtered, one page at a time.

The run page and its JSON twin (``/runs/{id}`` and ``/api/runs/{id}``) take the same query
parameters, so a filtered page is a link anyone can share and works without JavaScript:

- ``show``: ``all`` (default), ``misses`` (misses at ``depth``), ``top1_misses``, ``hits``
  (top-1 hits), ``errors`` (the retriever failed), ``flipped`` (changed outcome against the
  baseline) or ``stale`` (stale labels: every target gone from the index, see
  :mod:`retrieval_eval.evaluation.labels`);
- ``depth``: the gated depth ``misses`` counts at, one of the run's (``run.depths``); by default
  its deepest (:func:`~retrieval_eval.evaluation.results.miss_depth`: top-3 for the seed's
  ``[1, 3]``, top-5 for ``[1, 5]``), where the order and the row marks count a miss, as the
  report's question table does; the other filters ignore it;
- ``form`` and ``hard_class``: one value each, among those the run's questions have;
- ``page``: 1-based, :data:`PER_PAGE` questions a page.

Order: questions that flipped to a miss against the baseline, then those that flipped to a hit,
then the other misses at the run's deepest gated depth, then the stale labels, then the other
top-1 misses (hit by that depth, at rank 2 or deeper), then the hits; within each group the
set's order. A reader looking for what went wrong finds it on page one, and a miss no retriever
could have avoided sorts after the retrieval misses.
The store filters, orders and pages them in SQL (:mod:`retrieval_eval.store.questions`): a page
of a 200,000-question run reads its 50 questions, not the run.

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
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.results import QuestionResult, miss_depth
from retrieval_eval.store.questions import Named, Outcome, QuestionFilter

if TYPE_CHECKING:
    from retrieval_eval.store import Store, StoredRun

PER_PAGE = 50
SHOW = {
    "all": "all",
    "misses": "misses at depth (the deepest gated unless ?depth= names another)",
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
    depth: int | None = None  # where ``misses`` counts: None, the run's deepest gated depth


class Listing(BaseModel):
    """The page of questions shown, with what is needed to draw the filters and page links."""

    show: str
    form: str | None
    hard_class: str | None
    page: int
    depth: int = 3  # the gated depth ``misses`` counts at
    depths: list[int] = Field(default_factory=lambda: [1, 3])  # the run's gated depths
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
            "depth": self.depth,
        }
        current.update(changes)
        defaults = {"show": "all", "page": 1, "depth": self.miss_depth}
        return {k: v for k, v in current.items() if v is not None and defaults.get(k) != v}

    @property
    def miss_depth(self) -> int:
        """Where the order and the rows count a miss: the run's deepest gated depth."""
        return miss_depth(self.depths)

    def page_numbers(self) -> list[int | None]:
        """The page links to show: first, last and two either side of this one (None: a gap)."""
        wanted = {1, self.pages, *range(self.page - 2, self.page + 3)}
        shown: list[int | None] = []
        for number in sorted(n for n in wanted if 1 <= n <= self.pages):
            if shown and shown[-1] is not None and number - shown[-1] > 1:
                shown.append(None)
            shown.append(number)
        return shown


def _check(
    query: ListQuery, run_id: int, forms: list[str], classes: list[str], depths: list[int]
) -> None:
    if query.show not in SHOW:
        raise InvalidInputError(
            f"show={query.show!r} is not a filter; use one of: {', '.join(SHOW)}"
        )
    if query.depth is not None and query.depth not in depths:
        raise UnknownNameError(
            f"depth={query.depth}: run {run_id} does not gate it; its gated depths: "
            f"{', '.join(map(str, depths))}"
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


def _filter(
    query: ListQuery, flipped: tuple[str, ...], stale: tuple[str, ...], depth: int
) -> QuestionFilter:
    """The query's filters as the store reads them (``misses`` at ``depth``)."""
    shown: dict[str, dict[str, Any]] = {
        "all": {},
        "misses": {"miss_at": depth},
        "top1_misses": {"top1_hit": False},
        "hits": {"top1_hit": True},
        "errors": {"errors": True},
        "flipped": {"ids": flipped},
        "stale": {"ids": stale},
    }
    return QuestionFilter(**shown[query.show], form=query.form, hard_class=query.hard_class)


def list_questions(
    store: Store,
    stored: StoredRun,
    query: ListQuery,
    flipped_to_miss: list[str],
    flipped_to_hit: list[str],
    dead: Collection[str] = (),
) -> tuple[list[ListedQuestion], Listing]:
    """The questions of ``query``'s page, in the order above, and the listing that drew it;
    the store filters, orders and pages them (:mod:`retrieval_eval.store.questions`).

    ``dead``: every dead id the run's check found (stale and partly dead questions alike); the
    stale labels are the run's check's (:class:`~retrieval_eval.evaluation.labels.DeadLabels`).
    """
    run_id = stored.id
    labels = stored.result.dead_labels
    stale = tuple(labels.stale_questions) if labels is not None else ()
    stale_dead = set(labels.dead_ids) if labels is not None else set()
    gone = set(dead)
    forms, classes = stored.forms, stored.hard_classes
    if forms is None or classes is None:
        forms, classes = store.questions.values(run_id)
    depths = stored.result.depths
    _check(query, run_id, forms, classes, depths)
    deepest = miss_depth(depths)
    depth = query.depth if query.depth is not None else deepest
    flipped = tuple(dict.fromkeys([*flipped_to_miss, *flipped_to_hit]))
    where = _filter(query, flipped, stale, depth)
    total = store.questions.count(stored)
    matching = total if where.everything else store.questions.count(stored, where)
    pages = max(1, math.ceil(matching / PER_PAGE))
    if query.page > pages:
        raise UnknownNameError(
            f"page={query.page} is past the last page, {pages} "
            f"({matching} matching questions, {PER_PAGE} a page)"
        )
    listing = Listing(
        **query.model_dump(exclude={"depth"}),  # the filters and page as asked
        depth=depth,
        depths=depths,
        pages=pages,
        per_page=PER_PAGE,
        matching=matching,
        total=total,
        forms=forms,
        hard_classes=classes,
        stale_count=store.questions.count(stored, QuestionFilter(ids=stale)) if stale else 0,
        flipped_to_miss=flipped_to_miss,
        flipped_to_hit=flipped_to_hit,
    )
    order: list[Named | Outcome] = [
        Named(tuple(flipped_to_miss)),
        Named(tuple(flipped_to_hit)),
        "miss",
        Named(stale),
        "top1_miss",
        "top1_hit",
    ]
    page = (
        store.questions.page(
            run_id,
            where,
            order,
            offset=(query.page - 1) * PER_PAGE,
            limit=PER_PAGE,
            depth=deepest,
        )
        if matching
        else []
    )
    stale_ids = set(stale)

    def dead_ids(q: QuestionResult) -> list[str]:
        """A stale label's dead targets, sorted; else the expected ids gone from the index."""
        if q.id in stale_ids and (
            targets := {d for d in q.expected_document_ids if d in stale_dead}
        ):
            return sorted(targets)
        return [d for d in q.expected_document_ids if d in gone]

    shown = [
        ListedQuestion(**dict(q), stale_label=q.id in stale_ids, dead_ids=dead_ids(q)) for q in page
    ]
    return shown, listing

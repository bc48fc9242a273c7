"""The dashboard's replay pages: a (sample, retriever) series' drift over time, and one replay's
most-changed queries with both rankings side by side (paged, filtered by bucket).

Queries are shown in their stored form only (redacted, a keyed hash, or plain as the sample was
stored); a 404 names at most :func:`retrieval_eval.safety.limits.quote`'s share of a parameter.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from fastapi import HTTPException
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from retrieval_eval.store import Store
    from retrieval_eval.store.replays import StoredReplay

PAGE_SIZE = 50


class ReplayRow(BaseModel):
    replay_id: int
    run_date: datetime
    state: str
    index_version: str | None
    compared_index_version: str | None = None
    compared_id: int | None
    against: str | None
    queries: int
    errors: int
    mean_rbo: float | None
    top1_changed: float | None
    weighted_mean_rbo: float | None
    weighted_top1_changed: float | None


class Drift(BaseModel):
    sample: str
    retriever: str
    replays: list[ReplayRow]  # oldest first


class Moved(BaseModel):
    """One query of a replay: its rankings before and after, and how each document moved."""

    query: str
    count: int
    bucket: str
    rbo: float | None
    top1_changed: bool | None
    before: list[str]
    after: list[str]
    moves: dict[str, int | None] = Field(default_factory=dict)  # doc -> rank change (+ is up)
    error: str | None = None


class ReplayPage(BaseModel):
    replay: ReplayRow
    sample: str
    retriever: str
    k: int
    p: float
    figures: dict[str, Any]
    bucket: str | None
    page: int
    pages: int
    total: int
    queries: list[Moved]


def _row(stored: StoredReplay, compared_version: str | None = None) -> ReplayRow:
    return ReplayRow(
        replay_id=stored.id,
        run_date=stored.run_date,
        state=stored.state,
        index_version=stored.index_version,
        compared_index_version=compared_version,
        compared_id=stored.compared_id,
        against=stored.against,
        queries=stored.query_count,
        errors=stored.error_count,
        mean_rbo=stored.mean_rbo,
        top1_changed=stored.top1_changed,
        weighted_mean_rbo=stored.weighted_mean_rbo,
        weighted_top1_changed=stored.weighted_top1_changed,
    )


def _need(store: Store | None) -> Store:
    if store is None:
        raise HTTPException(503, "the result store is unavailable")
    return store


def drift(store: Store | None, sample: str, retriever: str, limit: int = 60) -> Drift:
    from retrieval_eval.safety.limits import quote

    rows = _need(store).replays.history(sample, retriever, limit)
    if not rows:
        raise HTTPException(404, f"no replays of sample {quote(sample)} by {quote(retriever)}")
    versions = {r.id: r.index_version for r in rows}
    return Drift(
        sample=sample,
        retriever=retriever,
        replays=[_row(r, versions.get(r.compared_id or -1)) for r in reversed(rows)],
    )


def _moves(before: list[str], after: list[str]) -> dict[str, int | None]:
    """Each document of ``after``: how many places it moved up (None: new in the ranking)."""
    was = {doc: rank for rank, doc in enumerate(before)}
    return {doc: (was[doc] - rank if doc in was else None) for rank, doc in enumerate(after)}


def replay_page(
    store: Store | None, replay_id: int, bucket: str | None = None, page: int = 1
) -> ReplayPage:
    from retrieval_eval.errors import UnknownNameError

    opened = _need(store)
    try:
        stored = opened.replays.get(replay_id)
        total, shown = opened.replays.changed_page(
            replay_id, bucket=bucket, offset=(page - 1) * PAGE_SIZE, limit=PAGE_SIZE
        )
    except UnknownNameError:
        raise HTTPException(404, f"no stored replay with id {replay_id}") from None
    pages = max(1, -(-total // PAGE_SIZE))
    if page > pages:
        raise HTTPException(
            404, f"page {page} of replay {replay_id} does not exist ({pages} pages)"
        )
    compared = opened.replays.get(stored.compared_id) if stored.compared_id else None
    return ReplayPage(
        replay=_row(stored, compared.index_version if compared else None),
        sample=stored.sample_name,
        retriever=stored.retriever,
        k=stored.k,
        p=stored.p,
        figures=stored.figures,
        bucket=bucket,
        page=page,
        pages=pages,
        total=total,
        queries=[
            Moved(
                query=c.text,
                count=c.count,
                bucket=c.bucket,
                rbo=c.rbo,
                top1_changed=c.top1_changed,
                before=list(c.before),
                after=list(c.ids),
                moves=_moves(list(c.before), list(c.ids)),
                error=c.error,
            )
            for c in shown
        ],
    )


def drift_charts(data: Drift) -> list[Any]:
    """Mean RBO and the share of queries whose top-1 changed, per replay; each tick names the
    replay and the index version it measured, and invalid replays are marked."""
    from dataclasses import replace

    from retrieval_eval.webui.charts import LineChart, Series, line_chart
    from retrieval_eval.webui.pages import NARROW_HEIGHT, NARROW_WIDTH, tick_label

    rows = data.replays
    labels = [tick_label(r.replay_id, r.run_date, r.index_version) for r in rows]
    invalid = [i for i, r in enumerate(rows) if r.state == "invalid"]
    drifted = [i for i, r in enumerate(rows) if r.state == "drift"]
    charts = []
    for title, series, percent in (
        (
            "Mean RBO against the replay before (1 = unchanged)",
            [
                Series("mean RBO", [r.mean_rbo for r in rows]),
                Series("weighted by count", [r.weighted_mean_rbo for r in rows]),
            ],
            False,
        ),
        (
            "Queries whose top-1 changed",
            [
                Series("top-1 changed", [r.top1_changed for r in rows]),
                Series("weighted by count", [r.weighted_top1_changed for r in rows]),
            ],
            True,
        ),
    ):
        wide = LineChart(
            title,
            labels,
            series,
            percent=percent,
            marks=drifted,
            mark_label="drift",
            invalid=invalid,
        )
        narrow = replace(wide, css_class="chart-narrow", width=NARROW_WIDTH, height=NARROW_HEIGHT)
        charts.append(line_chart(wide) + line_chart(narrow))
    return charts

"""Run summaries for the dashboard: the ``eval_result`` rows and their slices, without questions.

``Store.history`` and ``Store.latest_runs`` rebuild every run with all of its questions, which is
what regression detection needs; the overview and the history charts need only the summary
figures of many runs, so they read those here (SELECT only, through the store's engine). A run's
questions are read only for the run and side-by-side pages, through ``Store.get_run``.

Edge cases: only rows of this tool's grader are read; the 95 % intervals come from the row's
details and are recomputed (Wilson) from the counts for rows that have none (a slice's always
come from its row's hit counts); ``top3_hits`` comes from the row's details
and falls back to rate × count for rows written by other tools; SQLite hands datetimes back
without a zone, so naive values are taken as UTC (as the store does); an invalid run names no
baseline, even one stored before invalid runs stopped naming one (as the store reads it).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field
from sqlalchemy import Select, func, select

from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.store import Store
from retrieval_eval.store.engine import unavailable_as_error
from retrieval_eval.store.names import compared_baseline
from retrieval_eval.store.rows import utc
from retrieval_eval.store.schema import GRADER, eval_result, eval_result_slice

_NEWEST = (eval_result.c.run_date.desc(), eval_result.c.id.desc())
_SUMMARY_COLUMNS = (
    eval_result.c.id,
    eval_result.c.set_identifier,
    eval_result.c.model_id,
    eval_result.c.prompt_count,
    eval_result.c.passed_count,
    eval_result.c.pass_rate,
    eval_result.c.mean_score,
    eval_result.c.details,
    eval_result.c.run_date,
    eval_result.c.status,
    eval_result.c.labels_fingerprint,
    eval_result.c.corpus_revision,
    eval_result.c.error_count,
    eval_result.c.latency_p50_ms,
    eval_result.c.latency_p95_ms,
    eval_result.c.verdict_state,
    eval_result.c.is_regression,
    eval_result.c.accepted_baseline,
    eval_result.c.baseline_run_id,
)


class SliceSummary(BaseModel):
    questions: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    # 95 % Wilson intervals (low, high) of the slice's hits; None for an empty slice
    top1_hit_rate_ci: tuple[float, float] | None = None
    top3_hit_rate_ci: tuple[float, float] | None = None


class RunSummary(BaseModel):
    """The figures of one stored run; deltas are the ones its verdict recorded at save time."""

    run_id: int
    set: str
    retriever: str
    run_date: datetime
    status: str
    verdict_state: str | None
    is_regression: bool
    accepted_baseline: bool
    baseline_run_id: int | None
    question_count: int
    top1_hits: int
    top3_hits: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    top1_delta: float | None = None
    top3_delta: float | None = None
    # set only when stale labels were left out: the deltas are over these questions and rates
    compared_questions: int | None = None
    top1_baseline: float | None = None
    top1_current: float | None = None
    top3_baseline: float | None = None
    top3_current: float | None = None
    # 95 % Wilson intervals (low, high); None for a run without questions
    top1_hit_rate_ci: tuple[float, float] | None = None
    top3_hit_rate_ci: tuple[float, float] | None = None
    error_count: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    labels_fingerprint: str | None
    corpus_revision: str | None
    verdict_summary: str = ""
    by_form: dict[str, SliceSummary] = Field(default_factory=dict)
    by_hard_class: dict[str, SliceSummary] = Field(default_factory=dict)


def interval(stored: Any, hits: int, count: int) -> tuple[float, float] | None:
    """The stored ``[low, high]`` pair, else the Wilson interval of ``hits`` out of ``count``
    (rows written before intervals were stored, or by other tools)."""
    if isinstance(stored, list | tuple) and len(stored) == 2:
        return float(stored[0]), float(stored[1])
    return wilson(hits, count) if 0 <= hits <= count else None


def _summary(row: Any) -> RunSummary:
    details = row["details"] or {}
    verdict = details.get("verdict") or {}
    count = int(row["prompt_count"])
    top3_rate = row["mean_score"]
    top3_hits = details.get("top3_hits")
    if top3_hits is None:
        top3_hits = round((top3_rate or 0.0) * count)
    return RunSummary(
        run_id=row["id"],
        set=row["set_identifier"],
        retriever=row["model_id"],
        run_date=utc(row["run_date"]),
        status=row["status"],
        verdict_state=row["verdict_state"],
        is_regression=bool(row["is_regression"]),
        accepted_baseline=bool(row["accepted_baseline"]),
        baseline_run_id=compared_baseline(row["status"], row["baseline_run_id"]),
        question_count=count,
        top1_hits=int(row["passed_count"]),
        top3_hits=int(top3_hits),
        top1_hit_rate=row["pass_rate"],
        top3_hit_rate=top3_rate,
        top1_delta=verdict.get("top1_delta"),
        top3_delta=verdict.get("top3_delta"),
        top1_hit_rate_ci=interval(details.get("top1_hit_rate_ci"), int(row["passed_count"]), count),
        top3_hit_rate_ci=interval(details.get("top3_hit_rate_ci"), int(top3_hits), count),
        error_count=int(row["error_count"]),
        latency_p50_ms=row["latency_p50_ms"],
        latency_p95_ms=row["latency_p95_ms"],
        labels_fingerprint=row["labels_fingerprint"],
        corpus_revision=row["corpus_revision"],
        verdict_summary=str(verdict.get("summary") or ""),
        **compared_rates(verdict),
    )


def compared_rates(verdict: dict[str, Any]) -> dict[str, Any]:
    """The compared-question fields of a summary from its verdict's JSON (see the module
    docstring): empty when the verdict compared every question, or compared nothing."""
    compared = verdict.get("compared_questions")
    if compared is None:
        return {}
    return {
        "compared_questions": compared,
        **{k: verdict.get(k) for k in ("top1_baseline", "top1_current", "top3_baseline")},
        "top3_current": verdict.get("top3_current"),
    }


def _read(store: Store, query: Select[Any], *, with_slices: bool) -> list[RunSummary]:
    # connection failures become StoreUnavailableError naming the URL with its password masked
    with unavailable_as_error(store.engine.url), store.engine.connect() as conn:
        runs = [_summary(row) for row in conn.execute(query).mappings()]
        if with_slices and runs:
            ids = [run.run_id for run in runs]
            found: dict[int, list[Any]] = defaultdict(list)
            rows = conn.execute(
                select(eval_result_slice)
                .where(eval_result_slice.c.run_id.in_(ids))
                .order_by(eval_result_slice.c.run_id, eval_result_slice.c.position)
            ).mappings()
            for row in rows:
                found[row["run_id"]].append(row)
            for run in runs:
                for row in found[run.run_id]:
                    target = run.by_form if row["dimension"] == "form" else run.by_hard_class
                    count = int(row["question_count"])
                    target[row["value"]] = SliceSummary(
                        questions=count,
                        top1_hit_rate=row["top1_rate"],
                        top3_hit_rate=row["top3_rate"],
                        top1_hit_rate_ci=interval(None, int(row["top1_hits"]), count),
                        top3_hit_rate_ci=interval(None, int(row["top3_hits"]), count),
                    )
    return runs


def recent(
    store: Store,
    set_identifier: str,
    retriever: str,
    limit: int,
    *,
    with_slices: bool = False,
) -> list[RunSummary]:
    """Up to ``limit`` newest runs of one pair, returned OLDEST first (the order charts draw)."""
    query = (
        select(*_SUMMARY_COLUMNS)
        .where(
            eval_result.c.grader == GRADER,
            eval_result.c.set_identifier == set_identifier,
            eval_result.c.model_id == retriever,
        )
        .order_by(*_NEWEST)
        .limit(limit)
    )
    return list(reversed(_read(store, query, with_slices=with_slices)))


def recent_by_pair(store: Store, limit: int) -> dict[tuple[str, str], list[RunSummary]]:
    """The ``limit`` newest runs of every (set, retriever) pair, oldest first, in one query.

    Keys are ordered by set then retriever; the last run of each list is the pair's latest.
    """
    rank = (
        func.row_number()
        .over(partition_by=(eval_result.c.set_identifier, eval_result.c.model_id), order_by=_NEWEST)
        .label("rank")
    )
    ranked = select(eval_result.c.id, rank).where(eval_result.c.grader == GRADER).subquery()
    query = (
        select(*_SUMMARY_COLUMNS)
        .where(eval_result.c.id.in_(select(ranked.c.id).where(ranked.c.rank <= limit)))
        .order_by(eval_result.c.run_date, eval_result.c.id)
    )
    found: dict[tuple[str, str], list[RunSummary]] = defaultdict(list)
    for run in _read(store, query, with_slices=False):
        found[(run.set, run.retriever)].append(run)
    return {pair: found[pair] for pair in sorted(found)}

"""A run's rows as report cells, shared by the text, Markdown and HTML reports."""

from __future__ import annotations

from retrieval_eval.evaluation.intervals import Interval
from retrieval_eval.evaluation.results import QuestionResult, SliceRates
from retrieval_eval.reports.numbers import ci, decimal_interval, ms, pct


def rate_line(
    label: str, rate: float | None, hits: int, count: int, interval: Interval | None = None
) -> str:
    shown = "" if interval is None else f" {ci(interval)}"
    return f"{label}: {pct(rate)}{shown} ({hits}/{count})"


CI_NOTE = (
    "95% CI: Wilson score interval; for hit_rate@k only (recall, MRR and nDCG are means "
    "over questions, not proportions, and have none)."
)


def slice_cells(value: str, s: SliceRates) -> list[str]:
    """One slice as report cells: value, questions, top-1 (hits), its CI, top-3 (hits), its CI."""
    return [
        value,
        str(s.questions),
        f"{pct(s.top1_hit_rate)} ({s.top1_hits})",
        ci(s.top1_hit_rate_ci),
        f"{pct(s.top3_hit_rate)} ({s.top3_hits})",
        ci(s.top3_hit_rate_ci),
    ]


def question_cells(q: QuestionResult, dead: list[str] | None = None) -> list[str]:
    """One question as report cells: id, form, hard class, top-1, top-3, rank, latency, error.

    ``dead``: a stale label's dead targets (:meth:`RunResult.stale_targets`); its hit cells read
    ``stale`` and the error cell names the ids, since the question is left out of the verdict.
    """
    stale = dead is not None
    return [
        q.id,
        q.form.value,
        q.hard_class or "",
        "stale" if stale else "hit" if q.top1_hit else "miss",
        "stale" if stale else "hit" if q.top3_hit else "miss",
        "" if q.first_hit_rank is None else str(q.first_hit_rank),
        ms(q.latency_ms),
        f"stale label: {', '.join(dead or [])} no longer in the index" if stale else q.error or "",
    ]


def metric_ci(name: str, intervals: dict[str, Interval | None]) -> str:
    """A metric's interval: hit_rate@k has one (``–`` when its rate is null); means have none."""
    if name not in intervals:
        return ""
    return decimal_interval(intervals[name])

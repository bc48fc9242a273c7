"""A run's rows as report cells, shared by the text, Markdown and HTML reports."""

from __future__ import annotations

from collections.abc import Sequence

from retrieval_eval.evaluation.intervals import Interval
from retrieval_eval.evaluation.results import DEPTHS, QuestionResult, SliceRates
from retrieval_eval.formats.numbers import ci, decimal_interval, ms, pct


def rate_line(
    label: str, rate: float | None, hits: int, count: int, interval: Interval | None = None
) -> str:
    shown = "" if interval is None else f" {ci(interval)}"
    return f"{label}: {pct(rate)}{shown} ({hits}/{count})"


CI_NOTE = (
    "95% CI: Wilson score interval; for hit_rate@k only (recall, MRR and nDCG are means "
    "over questions, not proportions, and have none)."
)


def depth_headers(depths: Sequence[int], *, interval: bool = True) -> list[str]:
    """The column headers of the gated depths: ``top-1``, ``95% CI``, ``top-5``, ``95% CI``."""
    return [h for d in depths for h in ((f"top-{d}", "95% CI") if interval else (f"top-{d}",))]


def slice_cells(value: str, s: SliceRates, depths: Sequence[int] = DEPTHS) -> list[str]:
    """One slice as report cells: value, questions, then at each gated depth its rate (hits)
    and its CI (top-1 and top-3 by default)."""
    cells = [value, str(s.questions)]
    for depth in depths:
        cells += [f"{pct(s.hit_rate(depth))} ({s.hits(depth)})", ci(s.hit_rate_ci(depth))]
    return cells


def question_cells(
    q: QuestionResult, dead: list[str] | None = None, depths: Sequence[int] = DEPTHS
) -> list[str]:
    """One question as report cells: id, form, hard class, hit or miss at each gated depth
    (top-1 and top-3 by default), rank, latency, error.

    ``dead``: a stale label's dead targets (:meth:`RunResult.stale_targets`); its hit cells read
    ``stale`` and the error cell names the ids, since the question is left out of the verdict.
    """
    stale = dead is not None
    return [
        q.id,
        q.form.value,
        q.hard_class or "",
        *("stale" if stale else "hit" if q.hit_at(d) else "miss" for d in depths),
        "" if q.first_hit_rank is None else str(q.first_hit_rank),
        ms(q.latency_ms),
        f"stale label: {', '.join(dead or [])} no longer in the index" if stale else q.error or "",
    ]


def metric_ci(name: str, intervals: dict[str, Interval | None]) -> str:
    """A metric's interval: hit_rate@k has one (``–`` when its rate is null); means have none."""
    if name not in intervals:
        return ""
    return decimal_interval(intervals[name])

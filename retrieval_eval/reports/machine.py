"""The run report's lines on a model judge's labels (:mod:`retrieval_eval.labels.machine`):
who judged the top places, and the hit rate three ways, each with its interval. Only a run
whose set has machine judgments in the store gets them; JSON gives the same as ``judge_figures``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_eval.formats.numbers import ci, pct
from retrieval_eval.labels.machine import MIN_CALIBRATION

if TYPE_CHECKING:
    from retrieval_eval.labels.machine import JudgeFigures, Rate


def _rate(rate: Rate | None, why_none: str) -> str:
    return why_none if rate is None else f"{pct(rate.rate)} {ci((rate.low, rate.high))}"


def judge_figures_text(figures: JudgeFigures | None) -> str:
    """Plain-text lines (empty without figures)."""
    if figures is None:
        return ""
    holes = figures.holes
    shares = holes.shares()
    lines = [
        f"Model judgments ({', '.join(figures.machine_raters)}): of the top {holes.depth}'s "
        f"{holes.slots} places, people judged {pct(shares['human'])}, a model only "
        f"{pct(shares['machine'])}, nobody {pct(shares['unjudged'])}",
    ]
    level = f"{figures.confidence:.0%}"
    for d in figures.rates:
        lines.append(
            f"top-{d.depth} hit rate ({level} intervals): "
            f"people only {_rate(d.human, 'n/a')} "
            f"over {d.calibration_questions} questions people judged whole; "
            f"people + model {_rate(d.human_machine, 'n/a')}; "
            f"prediction-powered {_rate(d.ppi, f'n/a (needs {MIN_CALIBRATION} such questions)')}"
        )
    return "\n".join(lines) + "\n"

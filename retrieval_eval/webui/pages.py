"""Presentation helpers for the HTML pages: number formats, sparklines and charts from view data.

Kept apart from :mod:`views` (what is shown) so the JSON API never carries presentation, and from
the templates so the formatting rules are plain, testable functions.

Formats: rates as percentages with one decimal (``81.2%``), deltas in points (``+1.2 pts``),
``–`` for a missing value; dates in UTC.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from markupsafe import Markup

from retrieval_eval.results import QuestionResult
from retrieval_eval.webui.charts import LineChart, Series, line_chart, sparkline
from retrieval_eval.webui.queries import RunSummary, SliceSummary
from retrieval_eval.webui.views import History, Overview

MISSING = "–"
STATES = {
    "baseline": "baseline",
    "no_regression": "no regression",
    "regression": "regression",
    "not_comparable": "not comparable",
    "invalid_run": "invalid run",
}


def pct(rate: float | None) -> str:
    return MISSING if rate is None else f"{rate * 100:.1f}%"


def pts(delta: float | None) -> str:
    return MISSING if delta is None else f"{delta * 100:+.1f} pts"


def ms(value: float | None) -> str:
    return MISSING if value is None else f"{value:,.1f} ms"


def when(value: datetime | None) -> str:
    return MISSING if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def short_date(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%m-%d %H:%M")


def state_label(state: str | None) -> str:
    return STATES.get(state or "", "not checked")


def overview_rows(data: Overview) -> list[dict[str, Any]]:
    """One row per pair with its sparkline; ``first_of_set`` starts a set's group of rows."""
    rows = []
    previous = None
    per_set = Counter(pair.set for pair in data.pairs)
    for pair in data.pairs:
        marks = [i for i, run in enumerate(pair.recent) if run.is_regression]
        rows.append(
            {
                "pair": pair,
                "first_of_set": pair.set != previous,
                "pairs_in_set": per_set[pair.set],
                "spark": sparkline(
                    [run.top1_hit_rate for run in pair.recent],
                    label=f"top-1 over the last {len(pair.recent)} runs",
                    marks=marks,
                ),
            }
        )
        previous = pair.set
    return rows


def _x_labels(runs: Sequence[RunSummary]) -> list[str]:
    return [short_date(run.run_date) for run in runs]


def _slices(run: RunSummary, dim: str) -> dict[str, SliceSummary]:
    return run.by_form if dim == "form" else run.by_hard_class


def _slice_name(latest: RunSummary, dim: str, value: str) -> str:
    """A legend entry: the slice value and how many questions it has in the latest run."""
    found = _slices(latest, dim).get(value)
    return f"{value} ({found.questions})" if found is not None else value


def _slice_rate(run: RunSummary, dim: str, value: str, metric: str) -> float | None:
    found = _slices(run, dim).get(value)
    if found is None:
        return None
    return found.top1_hit_rate if metric == "top1" else found.top3_hit_rate


def history_charts(data: History, dim: str) -> list[Markup]:
    """The charts of the history page: rates (overall or per slice) and latency."""
    runs = data.runs
    labels = _x_labels(runs)
    marks = [i for i, run in enumerate(runs) if run.is_regression]
    charts: list[Markup] = []

    def chart(title: str, series: list[Series], **options: Any) -> Markup:
        return line_chart(LineChart(title, labels, series, marks=marks, **options))

    if dim == "overall":
        top1 = Series("top-1", [run.top1_hit_rate for run in runs])
        top3 = Series("top-3", [run.top3_hit_rate for run in runs], dashed=True)
        charts.append(chart("Hit rate", [top1, top3]))
    else:
        values: list[str] = []
        for run in runs:
            for value in _slices(run, dim):
                if value not in values:
                    values.append(value)
        name = "form" if dim == "form" else "hard class"
        for metric, title in (("top1", "Top-1"), ("top3", "Top-3")):
            series = [
                Series(
                    _slice_name(runs[-1], dim, value),
                    [_slice_rate(run, dim, value, metric) for run in runs],
                )
                for value in values
            ]
            charts.append(chart(f"{title} hit rate by {name}", series))
    p50 = Series("p50", [run.latency_p50_ms for run in runs])
    p95 = Series("p95", [run.latency_p95_ms for run in runs], dashed=True)
    charts.append(chart("Latency per question", [p50, p95], percent=False, unit="ms"))
    return charts


def shown(questions: list[QuestionResult], show: str) -> list[QuestionResult]:
    """The run page's filter: all questions, top-3 misses, or errored questions."""
    if show == "misses":
        return [q for q in questions if not q.top3_hit]
    if show == "errors":
        return [q for q in questions if q.error]
    return questions

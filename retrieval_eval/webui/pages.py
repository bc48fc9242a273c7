"""Presentation helpers for the HTML pages: sparklines, charts and labels from view data.

Kept apart from :mod:`views` (what is shown) so the JSON API never carries presentation, and from
the templates so the formatting rules are plain, testable functions.

Numbers are written by :mod:`retrieval_eval.formats.numbers` (the templates' filters); dates in
UTC.

History charts draw each rate with its 95 % Wilson band: the run's stored interval overall, and
per slice the interval of the slice's hits out of its questions when the chart has at most
:data:`MAX_BANDS` slices (more overlapping bands would hide the lines they belong to).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, TypedDict

from markupsafe import Markup, escape

from retrieval_eval.formats.numbers import MISSING
from retrieval_eval.reports.links import dag_run_of, dag_run_url
from retrieval_eval.reports.verdict import depth_label
from retrieval_eval.store.summary import RunSummary, SliceSummary, label_changes
from retrieval_eval.webui.charts import LineChart, Series, line_chart
from retrieval_eval.webui.sparkline import line_key, sparkline
from retrieval_eval.webui.views import Flips, History, Overview

MAX_BANDS = 2  # slices on one chart that still get their interval band (3 made a muddle)
NARROW_WIDTH, NARROW_HEIGHT = 380, 250  # the phone copy of each chart (see history_charts)
STATES = {
    "baseline": "baseline",
    "no_regression": "no regression",
    "regression": "regression",
    "not_comparable": "not comparable",
    "invalid_run": "invalid run",
}


def when(value: datetime | None) -> str:
    return MISSING if value is None else value.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def short_date(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%m-%d %H:%M")


LONG_ID = 24  # characters: a shorter id stays whole on one line (macros.html, dashboard.css)


def breakable(value: str) -> Markup:
    """An id, escaped; one longer than :data:`LONG_ID` gets a line-break opportunity
    (``<wbr>``, which even ``nowrap`` obeys) after each ``/``, so a cell too narrow for it breaks
    it between path parts (or at a hyphen), never inside a word."""
    text = str(value)
    if len(text) <= LONG_ID:
        return escape(text)
    return Markup("/<wbr>").join(escape(part) for part in text.split("/"))


def state_label(state: str | None) -> str:
    return STATES.get(state or "", "not checked")


def dag_run_href(run_key: str, airflow_url: str | None) -> str | None:
    """The Airflow DAG run that made a run (its key ``airflow:<dag_id>:<run_id>``), or None for
    a run made otherwise (the CLI) or when no Airflow UI is known."""
    ref = dag_run_of(run_key)
    return None if ref is None or airflow_url is None else dag_run_url(airflow_url, ref)


@dataclass(frozen=True)
class FlipMark:
    """How one question flipped: each kind (:meth:`Flips.kinds` keys) and its baseline rank."""

    kinds: tuple[str, ...]
    baseline_rank: int | None

    @property
    def to_miss(self) -> bool:
        return any(kind.endswith("_to_miss") for kind in self.kinds)


def flip_marks(flips: Flips) -> dict[str, FlipMark]:
    """Question id -> how it flipped. A question flipped at two gated depths is one question
    with two marks: the run page lists it once, among the questions, not once per kind."""
    kinds: dict[str, list[str]] = {}
    ranks: dict[str, int | None] = {}
    for kind in flips.kinds():
        for flip in flips.kind(kind):
            kinds.setdefault(flip.id, []).append(kind)
            ranks[flip.id] = flip.baseline_first_hit_rank
    return {qid: FlipMark(tuple(found), ranks[qid]) for qid, found in kinds.items()}


def overview_rows(data: Overview, depths: Sequence[int]) -> list[dict[str, Any]]:
    """One row per pair with its sparkline; ``first_of_set`` starts a set's group of rows.

    The sparkline has a line per depth of ``depths`` (the page's: :func:`trend_key`) its recent
    runs gate, each run's rate at it where it gates it; a line keeps its depth's style in every
    row, so top-5 reads alike in a row without top-3.
    """
    rows = []
    previous = None
    per_set = Counter(pair.set for pair in data.pairs)
    for pair in data.pairs:
        kinds = _run_kinds(pair.recent)
        lines = {
            depth_label(d): [run.hit_rate(d) if d in run.depths else None for run in pair.recent]
            for d in depths
        }
        gated = [depth_label(d) for d in depths if any(d in run.depths for run in pair.recent)]
        rows.append(
            {
                "pair": pair,
                "first_of_set": pair.set != previous,
                "pairs_in_set": per_set[pair.set],
                "spark": sparkline(
                    lines,
                    label=f"{', '.join(gated)} over the last {len(pair.recent)} runs",
                    **kinds,
                ),
            }
        )
        previous = pair.set
    return rows


def trend_key(depths: Sequence[int]) -> list[tuple[Markup, str]]:
    """The overview legend's sample and name of each sparkline line, one per depth of
    ``depths`` (those any pair's recent runs gate), in :func:`overview_rows`' styles."""
    return [(line_key(slot), depth_label(d)) for slot, d in enumerate(depths)]


class RunKinds(TypedDict):
    marks: list[int]  # regressions
    baselines: list[int]  # accepted baselines
    invalid: list[int]
    dead_labels: list[int]  # the run's dead-label check found expected ids gone


def _run_kinds(runs: Sequence[RunSummary]) -> RunKinds:
    """The positions of the regressions, accepted baselines, invalid runs and runs whose labels
    need attention among ``runs``."""
    return RunKinds(
        marks=[i for i, run in enumerate(runs) if run.is_regression],
        baselines=[i for i, run in enumerate(runs) if run.accepted_baseline],
        invalid=[i for i, run in enumerate(runs) if run.status != "valid"],
        dead_labels=[i for i, run in enumerate(runs) if run.dead_label_count],
    )


def tick_label(number: int, run_date: datetime, index_version: str | None) -> str:
    """A chart tick naming a run or replay: its id over the index build it measured, else its
    date (ids never repeat, dates may), short enough for the axis."""
    return f"#{number}\n{index_version or short_date(run_date)}"[:40]


def x_labels(runs: Sequence[RunSummary]) -> list[str]:
    """Tick labels naming each run (:func:`tick_label`)."""
    return [tick_label(run.run_id, run.run_date, run.index_version) for run in runs]


def _ci(run: RunSummary, depth: int) -> tuple[float, float] | None:
    return run.hit_rate_ci(depth)


def _slices(run: RunSummary, dim: str) -> dict[str, SliceSummary]:
    return run.by_form if dim == "form" else run.by_hard_class


def _slice_name(latest: RunSummary, dim: str, value: str) -> str:
    """A legend entry: the slice value and how many questions it has in the latest run."""
    found = _slices(latest, dim).get(value)
    return f"{value} ({found.questions})" if found is not None else value


def _slice_ci(run: RunSummary, dim: str, value: str, depth: int) -> tuple[float, float] | None:
    """The slice's Wilson interval at ``depth`` (None where the run has no such slice)."""
    found = _slices(run, dim).get(value)
    return None if found is None else found.hit_rate_ci(depth)


def _rate(run: RunSummary, depth: int) -> float | None:
    return run.hit_rate(depth)


def _slice_rate(run: RunSummary, dim: str, value: str, depth: int) -> float | None:
    found = _slices(run, dim).get(value)
    return None if found is None else found.hit_rate(depth)


def history_charts(data: History, dim: str) -> list[Markup]:
    """The charts of the history page: rates (overall or per slice) and latency."""
    runs = data.runs
    labels = x_labels(runs)
    kinds = _run_kinds(runs)
    changes = label_changes(runs)
    charts: list[Markup] = []

    def chart(title: str, series: list[Series], **options: Any) -> Markup:
        """The chart twice: for wide screens, and narrower (fewer ticks, wrapped legend) for
        phones, where the wide one would shrink its text below reading size; CSS shows one."""
        wide = LineChart(title, labels, series, **kinds, label_changes=changes, **options)
        narrow = replace(wide, css_class="chart-narrow", width=NARROW_WIDTH, height=NARROW_HEIGHT)
        return line_chart(wide) + line_chart(narrow)

    if dim == "overall":
        rates = [
            Series(f"top-{d}", [_rate(run, d) for run in runs], band=[_ci(r, d) for r in runs])
            for d in data.depths
        ]
        charts.append(chart("Hit rate (band: 95 % interval)", rates))
    else:
        values: list[str] = []
        for run in runs:
            for value in _slices(run, dim):
                if value not in values:
                    values.append(value)
        name = "form" if dim == "form" else "hard class"
        for depth in data.depths:
            title = f"Top-{depth}"
            series = [
                Series(
                    _slice_name(runs[-1], dim, value),
                    [_slice_rate(run, dim, value, depth) for run in runs],
                    band=[_slice_ci(run, dim, value, depth) for run in runs]
                    if len(values) <= MAX_BANDS
                    else None,
                )
                for value in values
            ]
            charts.append(chart(f"{title} hit rate by {name}", series))
    p50 = Series("p50", [run.latency_p50_ms for run in runs])
    p95 = Series("p95", [run.latency_p95_ms for run in runs])
    charts.append(chart("Latency per question", [p50, p95], percent=False, unit="ms"))
    return charts

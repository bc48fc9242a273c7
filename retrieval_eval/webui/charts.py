"""Server-side SVG line charts over runs, hand-written, no script, no web fonts.

:func:`line_chart` returns :class:`markupsafe.Markup`, so templates embed it as it is; every
piece of text that goes into the SVG (series names, x labels, tooltips) is escaped here. The
overview's sparklines are in :mod:`sparkline` (with their scale), the x axis in
:mod:`chart_axis`, colours, marker shapes and legend samples in :mod:`chart_marks`.

What a line chart shows, and why:

- Each series has its own colour, dash pattern and marker shape (circle, square, triangle,
  diamond, ...), so two series with equal values stay apart even in grey print or for a
  colour-blind reader, and the legend shows all three.
- Points of different series that would land on the same pixel (equal values at a run) are
  spread vertically by :data:`SPREAD` pixels each, centred on the true value, so a line never
  hides another. The shift is at most a few pixels (well under one grid step); tooltips give the
  true values.
- A series may carry a band (its 95 % interval per run): a translucent area behind its line.
- Runs are marked above the plot: regressions (red ▼ and a red column), accepted baselines
  (blue ◆ and a dotted line), invalid runs (grey ✕; their points are drawn hollow) and runs
  whose labels need attention (an amber outlined △: the dead-label check found expected ids no
  longer in the index, so their rates count questions no retriever can answer). Each kind
  present gets a legend entry.
- X labels may hold two lines (the run id over its date); they never repeat and never overlap
  (see :mod:`chart_axis`).

Edge cases:

- ``None`` values are gaps: the line breaks there and no point is drawn.
- A series with no value at all draws nothing; a chart with no value at all shows "no data".
- One point draws a dot (a line needs two).
- Points are spaced evenly by run, not by time: nightly runs with a missed night stay readable.
- Rate charts use a fixed 0–100 % axis so two charts can be compared by eye; other charts (latency)
  scale from 0 to a rounded-up maximum.
- Sparklines do NOT use 0–100 %: their axis spans the values' range widened to at least 20
  points, so a collapse from 80 % to 60 % spans the whole sparkline while a wobble of half a
  point stays a flat line (see :mod:`sparkline`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

from retrieval_eval.formats.numbers import pct
from retrieval_eval.webui.chart_axis import unique_labels, x_labels, y_ticks
from retrieval_eval.webui.chart_marks import (
    BASELINE_COLOUR,
    DASHES,
    INVALID_COLOUR,
    LABEL_CHANGE_COLOUR,
    LABEL_CHANGE_TEXT,
    LABELS_TEXT,
    MARKERS,
    PALETTE,
    REGRESSION_COLOUR,
    LegendEntry,
    labels_glyph,
    legend_entry,
    marker_path,
    polylines,
    segments,
)

SPREAD = 3.0  # pixels between coincident points of different series

Scale = Callable[[int], float]  # x position of run i
FloatScale = Callable[[float], float]  # y position of a value
Band = Sequence[tuple[float, float] | None]


@dataclass
class Series:
    """One line: a name for the legend, one value per x position (``None`` = no value).

    ``band`` is an optional (low, high) per position, drawn as a translucent area; ``dashed``
    forces a dash on a series whose position would draw it solid (the first).
    """

    name: str
    values: Sequence[float | None]
    colour: str = ""
    dashed: bool = False
    band: Band | None = None


@dataclass
class LineChart:
    """A chart over runs: ``x_labels`` name each position (e.g. ``"#12\\n11-30 16:24"``)."""

    title: str
    x_labels: Sequence[str]
    series: list[Series]
    percent: bool = True
    unit: str = ""
    marks: Sequence[int] = field(default_factory=list)  # x positions to flag (regressions)
    mark_label: str = "regression"
    baselines: Sequence[int] = field(default_factory=list)  # accepted baselines
    invalid: Sequence[int] = field(default_factory=list)  # invalid runs
    dead_labels: Sequence[int] = field(default_factory=list)  # runs whose labels need attention
    # positions whose run was first judged against other labels than the run before's
    label_changes: Sequence[int] = field(default_factory=list)
    width: int = 720
    height: int = 270
    css_class: str = "chart"  # "chart-narrow" for the copy drawn for phones

    def shown(self, marked: Sequence[int], first: int = 0) -> list[int]:
        """The positions of ``marked`` (one of the mark lists) that fall on the chart; the
        legend and the marks both draw these. ``first=1`` for label changes, which are drawn
        between a run and the one before it."""
        return [i for i in marked if first <= i < len(self.x_labels)]


_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 52, 20, 40, 40
_LEGEND_ROW = 20
_CHAR_W = 6.6  # average glyph width of the 12 px system font, for the layout


def _fmt(value: float, percent: bool, unit: str) -> str:
    if percent:
        return pct(value)
    return f"{value:,.1f}{(' ' + unit) if unit else ''}"


def _nice_ceiling(value: float) -> float:
    """The smallest 1, 2, 2.5 or 5 times a power of ten that is at least ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    for step in (1, 2, 2.5, 5, 10):
        if value <= step * power:
            return step * power
    return 10 * power


def _legend_entries(chart: LineChart) -> list[LegendEntry]:
    """The legend: each series, then the interval band and each kind of run mark present."""
    entries = [
        LegendEntry("series", s.name, _colour(chart.series, i), _dash(s, i), MARKERS[i % 6])
        for i, s in enumerate(chart.series)
    ]
    if any(s.band for s in chart.series):
        entries.append(LegendEntry("band", "95 % interval", PALETTE[0]))
    if chart.shown(chart.marks):
        entries.append(LegendEntry("regression", chart.mark_label))
    if chart.shown(chart.baselines):
        entries.append(LegendEntry("baseline", "accepted baseline"))
    if chart.shown(chart.invalid):
        entries.append(LegendEntry("invalid", "invalid run (hollow points)"))
    if chart.shown(chart.dead_labels):
        entries.append(LegendEntry("labels", LABELS_TEXT))
    if chart.shown(chart.label_changes, first=1):
        entries.append(LegendEntry("label_change", LABEL_CHANGE_TEXT))
    return entries


def _legend_rows(entries: list[LegendEntry], width: int) -> list[list[tuple[int, float]]]:
    """Legend entries (entry index, x offset) per row, wrapped to the chart's width."""
    rows: list[list[tuple[int, float]]] = [[]]
    x = float(_PAD_LEFT)
    for index, entry in enumerate(entries):
        room = 30 + _CHAR_W * len(entry.text) + 16
        if rows[-1] and x + room > width - _PAD_RIGHT:
            rows.append([])
            x = float(_PAD_LEFT)
        rows[-1].append((index, x))
        x += room
    return rows


def line_chart(chart: LineChart) -> Markup:
    """Render ``chart`` as a responsive inline SVG (it scales to its container's width)."""
    entries = _legend_entries(chart)
    legend = _legend_rows(entries, chart.width)
    w, h = chart.width, chart.height + _LEGEND_ROW * len(legend)
    plot_w = w - _PAD_LEFT - _PAD_RIGHT
    plot_h = chart.height - _PAD_TOP - _PAD_BOTTOM
    plot_bottom = _PAD_TOP + plot_h
    count = len(chart.x_labels)
    labels = unique_labels(chart.x_labels)
    values = [v for s in chart.series for v in s.values if v is not None]
    top = 1.0 if chart.percent else _nice_ceiling(max(values, default=0.0))

    def x_at(i: int) -> float:
        return _PAD_LEFT + (plot_w / 2 if count <= 1 else plot_w * i / (count - 1))

    def y_at(v: float) -> float:
        return _PAD_TOP + plot_h * (1 - min(max(v / top, 0.0), 1.0))

    title = escape(chart.title)
    parts = [
        f'<svg class="{chart.css_class}" viewBox="0 0 {w} {h}" width="100%" role="img" '
        f'aria-label="{title}" xmlns="http://www.w3.org/2000/svg" '
        'font-family="system-ui, sans-serif" font-size="12">',
        f"<title>{title}</title>",
        f'<text x="{_PAD_LEFT}" y="18" font-size="14" font-weight="600">{title}</text>',
    ]
    for value, label in y_ticks(top, chart.percent):  # grid lines at 0, 25, ... 100 % of top
        y = y_at(value)
        parts.append(
            f'<line x1="{_PAD_LEFT}" x2="{w - _PAD_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#ddd" stroke-width="1"/>'
        )
        parts.append(
            f'<text class="y-tick" x="{_PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" '
            f'fill="#555">{label}</text>'
        )
    if chart.unit and not chart.percent:
        parts.append(
            f'<text x="{_PAD_LEFT - 6}" y="{_PAD_TOP - 14}" text-anchor="end" fill="#555">'
            f"{escape(chart.unit)}</text>"
        )
    parts.extend(_run_marks(chart, labels, x_at, plot_h))
    parts.extend(x_labels(labels, x_at, plot_bottom + 16, plot_w))
    if not values:
        parts.append(
            f'<text x="{w / 2:.0f}" y="{_PAD_TOP + plot_h / 2:.0f}" text-anchor="middle" '
            'fill="#777">no data</text>'
        )
    offsets = _spread(chart.series, y_at)
    for index, series in enumerate(chart.series):
        if series.band:
            parts.extend(_band(series.band, _colour(chart.series, index), x_at, y_at))
    invalid = set(chart.shown(chart.invalid))
    for index, series in enumerate(chart.series):
        style = _Style(_colour(chart.series, index), _dash(series, index), MARKERS[index % 6])
        parts.extend(_series(series, style, x_at, y_at, offsets[index], labels, invalid, chart))
    parts.append('<g class="legend">')
    for row_number, row in enumerate(legend):
        y = plot_bottom + 50 + row_number * _LEGEND_ROW
        for index, x in row:
            parts.append(legend_entry(entries[index], x, y))
    parts.append("</g></svg>")
    return Markup("".join(parts))


@dataclass
class _Style:
    colour: str
    dash: str
    marker: str


def _colour(series: list[Series], index: int) -> str:
    return series[index].colour or PALETTE[index % len(PALETTE)]


def _dash(series: Series, index: int) -> str:
    dash = DASHES[index % len(DASHES)]
    return dash or ("7 4" if series.dashed else "")


def _spread(series: list[Series], y_at: FloatScale) -> list[list[float]]:
    """Per series and position, the pixel shift that keeps coincident points apart."""
    count = max((len(s.values) for s in series), default=0)
    offsets = [[0.0] * count for _ in series]
    for i in range(count):
        at: dict[int, list[int]] = {}
        for index, s in enumerate(series):
            value = s.values[i] if i < len(s.values) else None
            if value is not None:
                at.setdefault(round(y_at(value)), []).append(index)
        for group in at.values():
            for rank, index in enumerate(group):
                offsets[index][i] = (rank - (len(group) - 1) / 2) * SPREAD
    return offsets


def _plain(label: str) -> str:
    return label.replace("\n", " ")


def _run_marks(chart: LineChart, labels: Sequence[str], x_at: Scale, plot_h: float) -> list[str]:
    """Regressions, accepted baselines, invalid runs and runs whose labels need attention, above
    the plot and behind the lines."""
    out = []
    glyph_y = _PAD_TOP - 5
    kinds = (set(chart.marks), set(chart.baselines), set(chart.invalid), set(chart.dead_labels))

    def glyph_x(i: int, kind: int) -> float:
        """Glyphs of one run side by side (a regression accepted as the baseline has two)."""
        present = [k for k in range(len(kinds)) if i in kinds[k]]
        return x_at(i) + (present.index(kind) - (len(present) - 1) / 2) * 12

    for i in chart.shown(chart.marks):
        x = x_at(i)
        out.append(
            f'<rect class="mark" x="{x - 5:.1f}" y="{_PAD_TOP}" width="10" height="{plot_h}" '
            f'fill="{REGRESSION_COLOUR}" fill-opacity="0.15">'
            f"<title>{escape(chart.mark_label)}: {escape(_plain(labels[i]))}</title></rect>"
            f'<text class="mark-regression" x="{glyph_x(i, 0):.1f}" y="{glyph_y}" '
            'text-anchor="middle" '
            f'fill="{REGRESSION_COLOUR}" font-weight="700">▼</text>'
        )
    for i in chart.shown(chart.baselines):
        x = x_at(i)
        out.append(
            f'<line class="mark-baseline" x1="{x:.1f}" x2="{x:.1f}" y1="{_PAD_TOP}" '
            f'y2="{_PAD_TOP + plot_h}" stroke="{BASELINE_COLOUR}" stroke-dasharray="1 3">'
            f"<title>accepted baseline: {escape(_plain(labels[i]))}</title></line>"
            f'<path d="{marker_path("diamond", glyph_x(i, 1), glyph_y - 4, 5)}" '
            f'fill="{BASELINE_COLOUR}"/>'
        )
    for i in chart.shown(chart.invalid):
        out.append(
            f'<path class="mark-invalid" d="{marker_path("cross", glyph_x(i, 2), glyph_y - 4, 5)}" '
            f'stroke="{INVALID_COLOUR}" stroke-width="2" fill="none">'
            f"<title>invalid run: {escape(_plain(labels[i]))}</title></path>"
        )
    for i in chart.shown(chart.label_changes, first=1):
        x = (x_at(i - 1) + x_at(i)) / 2  # between the last run of the old labels and the first
        out.append(
            f'<line class="mark-label-change" x1="{x:.1f}" x2="{x:.1f}" y1="{_PAD_TOP}" '
            f'y2="{_PAD_TOP + plot_h}" stroke="{LABEL_CHANGE_COLOUR}" stroke-width="2" '
            f'stroke-dasharray="4 2"><title>{LABEL_CHANGE_TEXT}: before '
            f"{escape(_plain(labels[i]))}</title></line>"
        )
    for i in chart.shown(chart.dead_labels):
        out.append(
            f'<g class="mark-labels">{labels_glyph(glyph_x(i, 3), glyph_y - 4)}'
            f"<title>{LABELS_TEXT}: {escape(_plain(labels[i]))}</title></g>"
        )
    return out


def _band(band: Band, colour: str, x_at: Scale, y_at: FloatScale) -> list[str]:
    """The translucent area between each run's low and high, broken where a run has none."""
    out = []
    lows = [None if b is None else (x_at(i), y_at(b[0])) for i, b in enumerate(band)]
    highs = [None if b is None else (x_at(i), y_at(b[1])) for i, b in enumerate(band)]
    for low, high in zip(segments(lows), segments(highs), strict=True):
        if len(low) == 1:  # one run: a short bar
            (x, y0), (_, y1) = low[0], high[0]
            low, high = [(x - 3, y0), (x + 3, y0)], [(x - 3, y1), (x + 3, y1)]
        coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in [*high, *reversed(low)])
        out.append(
            f'<polygon class="band" points="{coords}" fill="{colour}" fill-opacity="0.14" '
            'stroke="none"/>'
        )
    return out


def _series(
    series: Series,
    style: _Style,
    x_at: Scale,
    y_at: FloatScale,
    offsets: Sequence[float],
    labels: Sequence[str],
    invalid: set[int],
    chart: LineChart,
) -> list[str]:
    def at(i: int, v: float) -> tuple[float, float]:
        return x_at(i), y_at(v) + (offsets[i] if i < len(offsets) else 0.0)

    points = [None if v is None else at(i, v) for i, v in enumerate(series.values)]
    out = polylines(points, style.colour, "2", style.dash)
    name = escape(series.name)
    for i, value in enumerate(series.values):
        if value is None:
            continue
        x, y = at(i, value)
        label = escape(_plain(labels[i])) if i < len(labels) else ""
        hollow = i in invalid
        fill = "#fff" if hollow else style.colour
        note = " (invalid run)" if hollow else ""
        out.append(
            f'<path class="point" d="{marker_path(style.marker, x, y, 3.6)}" fill="{fill}" '
            f'stroke="{style.colour}" stroke-width="1.5">'
            f"<title>{name} {label}{note}: {_fmt(value, chart.percent, chart.unit)}</title></path>"
        )
    return out

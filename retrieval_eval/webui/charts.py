"""Server-side SVG charts: a line chart and a sparkline, hand-written, no script, no web fonts.

Both return :class:`markupsafe.Markup`, so templates embed them as they are; every piece of text
that goes into the SVG (series names, x labels, tooltips) is escaped here.

Edge cases:

- ``None`` values are gaps: the line breaks there and no point is drawn.
- A series with no value at all draws nothing; a chart with no value at all shows "no data".
- One point draws a dot (a line needs two).
- Points are spaced evenly by run, not by time: nightly runs with a missed night stay readable.
- Rate charts use a fixed 0–100 % axis so two charts can be compared by eye; other charts (latency)
  scale from 0 to a rounded-up maximum.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from markupsafe import Markup, escape

# Colour-blind-safe palette (Okabe–Ito), enough for the slices of a typical golden set.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]
REGRESSION_COLOUR = "#C62828"

Scale = Callable[[int], float]  # x position of run i
FloatScale = Callable[[float], float]  # y position of a value


@dataclass
class Series:
    """One line: a name for the legend, one value per x position (``None`` = no value)."""

    name: str
    values: Sequence[float | None]
    colour: str = ""
    dashed: bool = False


@dataclass
class LineChart:
    """A chart over runs: ``x_labels`` name each position (e.g. the run date)."""

    title: str
    x_labels: Sequence[str]
    series: list[Series]
    percent: bool = True
    unit: str = ""
    marks: Sequence[int] = field(default_factory=list)  # x positions to flag (regressions)
    mark_label: str = "regression"
    width: int = 720
    height: int = 260


_PAD_LEFT, _PAD_RIGHT, _PAD_TOP, _PAD_BOTTOM = 52, 20, 34, 30
_LEGEND_ROW = 18
_CHAR_W = 6.2  # average glyph width of the 11 px system font, for the legend layout


def _fmt(value: float, percent: bool, unit: str) -> str:
    if percent:
        return f"{value * 100:.1f}%"
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


def _segments(points: list[tuple[float, float] | None]) -> list[list[tuple[float, float]]]:
    """Split a point list at gaps, so a missing value breaks the line."""
    runs: list[list[tuple[float, float]]] = [[]]
    for point in points:
        if point is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def _legend_rows(series: list[Series], width: int) -> list[list[tuple[int, float]]]:
    """Legend entries (series index, x offset) per row, wrapped to the chart's width."""
    rows: list[list[tuple[int, float]]] = [[]]
    x = float(_PAD_LEFT)
    for index, item in enumerate(series):
        entry = 18 + _CHAR_W * len(item.name) + 14
        if rows[-1] and x + entry > width - _PAD_RIGHT:
            rows.append([])
            x = float(_PAD_LEFT)
        rows[-1].append((index, x))
        x += entry
    return rows


def line_chart(chart: LineChart) -> Markup:
    """Render ``chart`` as a responsive inline SVG (it scales to its container's width)."""
    legend = _legend_rows(chart.series, chart.width)
    w, h = chart.width, chart.height + _LEGEND_ROW * len(legend)
    plot_w = w - _PAD_LEFT - _PAD_RIGHT
    plot_h = chart.height - _PAD_TOP - _PAD_BOTTOM
    plot_bottom = _PAD_TOP + plot_h
    count = len(chart.x_labels)
    values = [v for s in chart.series for v in s.values if v is not None]
    top = 1.0 if chart.percent else _nice_ceiling(max(values, default=0.0))

    def x_at(i: int) -> float:
        return _PAD_LEFT + (plot_w / 2 if count <= 1 else plot_w * i / (count - 1))

    def y_at(v: float) -> float:
        return _PAD_TOP + plot_h * (1 - min(max(v / top, 0.0), 1.0))

    title = escape(chart.title)
    parts = [
        f'<svg class="chart" viewBox="0 0 {w} {h}" width="100%" role="img" '
        f'aria-label="{title}" xmlns="http://www.w3.org/2000/svg" '
        'font-family="system-ui, sans-serif" font-size="11">',
        f"<title>{title}</title>",
        f'<text x="{_PAD_LEFT}" y="17" font-size="13" font-weight="600">{title}</text>',
    ]
    for tick in range(5):  # horizontal grid lines and y labels at 0, 25, 50, 75, 100 % of top
        value = top * tick / 4
        y = y_at(value)
        parts.append(
            f'<line x1="{_PAD_LEFT}" x2="{w - _PAD_RIGHT}" y1="{y:.1f}" y2="{y:.1f}" '
            'stroke="#ddd" stroke-width="1"/>'
        )
        parts.append(
            f'<text x="{_PAD_LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#555">'
            f"{_tick(value, chart.percent)}</text>"
        )
    if chart.unit and not chart.percent:
        parts.append(
            f'<text x="{_PAD_LEFT - 6}" y="{_PAD_TOP - 10}" text-anchor="end" fill="#555">'
            f"{escape(chart.unit)}</text>"
        )
    for i in chart.marks:  # regressions: a red band behind the points
        if 0 <= i < count:
            x = x_at(i)
            parts.append(
                f'<rect class="mark" x="{x - 5:.1f}" y="{_PAD_TOP}" width="10" height="{plot_h}" '
                f'fill="{REGRESSION_COLOUR}" fill-opacity="0.15">'
                f"<title>{escape(chart.mark_label)}: {escape(chart.x_labels[i])}</title></rect>"
            )
            parts.append(
                f'<text x="{x:.1f}" y="{_PAD_TOP - 3}" text-anchor="middle" '
                f'fill="{REGRESSION_COLOUR}" font-weight="700">▼</text>'
            )
    parts.extend(_x_labels(chart.x_labels, x_at, plot_bottom + 16))
    if not values:
        parts.append(
            f'<text x="{w / 2:.0f}" y="{_PAD_TOP + plot_h / 2:.0f}" text-anchor="middle" '
            'fill="#777">no data</text>'
        )
    for index, series in enumerate(chart.series):
        parts.extend(_series(series, _colour(chart.series, index), x_at, y_at, chart))
    for row_number, row in enumerate(legend):
        y = plot_bottom + 40 + row_number * _LEGEND_ROW
        for index, x in row:
            item = chart.series[index]
            dash = ' stroke-dasharray="4 3"' if item.dashed else ""
            parts.append(
                f'<line x1="{x:.0f}" x2="{x + 14:.0f}" y1="{y - 4}" y2="{y - 4}" '
                f'stroke="{_colour(chart.series, index)}" stroke-width="3"{dash}/>'
                f'<text x="{x + 18:.0f}" y="{y}">{escape(item.name)}</text>'
            )
    parts.append("</svg>")
    return Markup("".join(parts))


def _colour(series: list[Series], index: int) -> str:
    return series[index].colour or PALETTE[index % len(PALETTE)]


def _tick(value: float, percent: bool) -> str:
    if percent:
        return f"{value * 100:.0f}%"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def _x_labels(labels: Sequence[str], x_at: Scale, y: float) -> list[str]:
    """At most about eight labels, always the first and the last, so they never overlap.

    The end labels are anchored inwards so they are not clipped at the chart's edges.
    """
    count = len(labels)
    if not count:
        return []
    step = max(1, math.ceil(count / 8))
    shown = list(range(0, count, step))
    if shown[-1] != count - 1:
        # the newest run is always labelled; it replaces a neighbour that would collide with it
        if len(shown) > 1 and count - 1 - shown[-1] < step / 2:
            shown.pop()
        shown.append(count - 1)
    out = []
    for i in shown:
        anchor = "middle"
        if count > 1 and i == 0:
            anchor = "start"
        elif count > 1 and i == count - 1:
            anchor = "end"
        out.append(
            f'<text x="{x_at(i):.1f}" y="{y:.1f}" text-anchor="{anchor}" '
            f'fill="#555">{escape(labels[i])}</text>'
        )
    return out


def _series(
    series: Series, colour: str, x_at: Scale, y_at: FloatScale, chart: LineChart
) -> list[str]:
    points = [None if v is None else (x_at(i), y_at(v)) for i, v in enumerate(series.values)]
    dash = ' stroke-dasharray="6 4"' if series.dashed else ""
    out = []
    for run in _segments(points):
        if len(run) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            out.append(
                f'<polyline points="{coords}" fill="none" stroke="{colour}" '
                f'stroke-width="2"{dash}/>'
            )
    name = escape(series.name)
    for i, value in enumerate(series.values):
        if value is None:
            continue
        label = escape(chart.x_labels[i]) if i < len(chart.x_labels) else ""
        out.append(
            f'<circle cx="{x_at(i):.1f}" cy="{y_at(value):.1f}" r="3" fill="{colour}">'
            f"<title>{name} {label}: {_fmt(value, chart.percent, chart.unit)}</title></circle>"
        )
    return out


def sparkline(
    values: Sequence[float | None],
    *,
    width: int = 110,
    height: int = 26,
    label: str = "recent runs",
    marks: Sequence[int] = (),
) -> Markup:
    """A small 0–100 % trend line of rates, oldest left; the last point is dotted, marks in red."""
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    parts = [
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}: "
        + escape(", ".join(f"{v * 100:.0f}%" for _, v in present) or "no data")
        + "</title>",
    ]
    count = len(values)

    def x_at(i: int) -> float:
        return 2 + (width - 4) * (0.5 if count <= 1 else i / (count - 1))

    def y_at(v: float) -> float:
        return 2 + (height - 4) * (1 - min(max(v, 0.0), 1.0))

    points = [None if v is None else (x_at(i), y_at(v)) for i, v in enumerate(values)]
    for run in _segments(points):
        if len(run) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.5"/>'
            )
    for i in marks:
        if 0 <= i < count and values[i] is not None:
            parts.append(
                f'<circle cx="{x_at(i):.1f}" cy="{y_at(values[i] or 0):.1f}" r="2.5" '
                f'fill="{REGRESSION_COLOUR}"/>'
            )
    if present:
        i, v = present[-1]
        parts.append(f'<circle cx="{x_at(i):.1f}" cy="{y_at(v):.1f}" r="2" fill="{PALETTE[0]}"/>')
    parts.append("</svg>")
    return Markup("".join(parts))

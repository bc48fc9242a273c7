"""The overview's sparklines: a small SVG trend line of one rate over a pair's recent runs.

Scale: NOT 0–100 %. A 26-pixel-high line on a 0–100 % axis turns a collapse from 80 % to 60 %
into a 5-pixel dip that reads as noise, while scaling to the values' own min–max would blow a
half-point wobble up to the full height. So the axis spans the values' range widened (around its
middle) to at least :data:`SPARK_MIN_SPAN`, 20 points, kept within 0–100 %: a drop of 20 points
or more fills the whole height, a wobble of half a point stays flat, and the tooltip names the
axis' range (``axis 60–80%``) next to the values.

Edge cases: ``None`` values are gaps; no value at all draws an empty box whose tooltip says
"no data"; one value is a dot in the middle.
"""

from __future__ import annotations

from collections.abc import Sequence

from markupsafe import Markup, escape

from retrieval_eval.reports.numbers import pct
from retrieval_eval.webui.chart_marks import (
    BASELINE_COLOUR,
    INVALID_COLOUR,
    PALETTE,
    REGRESSION_COLOUR,
    labels_glyph,
    marker_path,
    segments,
)

SPARK_MIN_SPAN = 0.2  # a sparkline's axis spans at least 20 points


def spark_range(values: Sequence[float | None]) -> tuple[float, float]:
    """A sparkline's axis: the values' range widened (around its middle) to at least
    :data:`SPARK_MIN_SPAN`, kept within 0–100 %."""
    present = [v for v in values if v is not None]
    if not present:
        return 0.0, 1.0
    low, high = min(present), max(present)
    if high - low < SPARK_MIN_SPAN:
        middle = (low + high) / 2
        low, high = middle - SPARK_MIN_SPAN / 2, middle + SPARK_MIN_SPAN / 2
        if low < 0:
            low, high = 0.0, SPARK_MIN_SPAN
        elif high > 1:
            low, high = 1.0 - SPARK_MIN_SPAN, 1.0
    return low, high


def sparkline(
    values: Sequence[float | None],
    *,
    width: int = 110,
    height: int = 28,
    label: str = "recent runs",
    marks: Sequence[int] = (),
    baselines: Sequence[int] = (),
    invalid: Sequence[int] = (),
    dead_labels: Sequence[int] = (),
) -> Markup:
    """A small trend line of rates, oldest left, on the axis of :func:`spark_range`.

    The last point is dotted; regressions are red dots, accepted baselines blue diamonds,
    invalid runs grey hollow circles and runs whose labels need attention amber outlined
    triangles. The tooltip lists the values and the axis' range.
    """
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    low, high = spark_range(values)
    listed = ", ".join(pct(v, digits=0) for _, v in present) or "no data"
    axis = f" (axis {low * 100:.0f}–{pct(high, digits=0)})" if present else ""
    parts = [
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}: {escape(listed)}{axis}</title>",
    ]
    count = len(values)

    def x_at(i: int) -> float:
        return 4 + (width - 8) * (0.5 if count <= 1 else i / (count - 1))

    def y_at(v: float) -> float:
        return 4 + (height - 8) * (1 - min(max((v - low) / (high - low), 0.0), 1.0))

    points = [None if v is None else (x_at(i), y_at(v)) for i, v in enumerate(values)]
    for run in segments(points):
        if len(run) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            parts.append(
                f'<polyline points="{coords}" fill="none" stroke="{PALETTE[0]}" stroke-width="1.5"/>'
            )
    if present:
        i, v = present[-1]
        parts.append(f'<circle cx="{x_at(i):.1f}" cy="{y_at(v):.1f}" r="2" fill="{PALETTE[0]}"/>')
    kinds = (
        (marks, f'r="2.5" fill="{REGRESSION_COLOUR}" class="spark-regression"'),
        (invalid, f'r="2.5" fill="#fff" stroke="{INVALID_COLOUR}" class="spark-invalid"'),
    )
    for positions, attributes in kinds:
        for i in positions:
            value = values[i] if 0 <= i < count else None
            if value is not None:
                parts.append(f'<circle cx="{x_at(i):.1f}" cy="{y_at(value):.1f}" {attributes}/>')
    for i in baselines:
        value = values[i] if 0 <= i < count else None
        if value is not None:
            shape = marker_path("diamond", x_at(i), y_at(value), 3.5)
            parts.append(f'<path class="spark-baseline" d="{shape}" fill="{BASELINE_COLOUR}"/>')
    for i in dead_labels:
        value = values[i] if 0 <= i < count else None
        if value is not None:
            glyph = labels_glyph(x_at(i), y_at(value), 3.5)
            parts.append(f'<g class="spark-labels">{glyph}</g>')
    parts.append("</svg>")
    return Markup("".join(parts))

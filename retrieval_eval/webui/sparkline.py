"""The overview's sparklines: a small SVG trend of rates over a pair's recent runs, one line
per rate (one per gated depth on the overview).

Scale: NOT 0–100 %. A 26-pixel-high line on a 0–100 % axis turns a collapse from 80 % to 60 %
into a 5-pixel dip that reads as noise, while scaling to the values' own min–max would blow a
half-point wobble up to the full height. So the axis spans the values' range widened (around its
middle) to at least :data:`SPARK_MIN_SPAN`, 20 points, kept within 0–100 %: a drop of 20 points
or more fills the whole height, a wobble of half a point stays flat, and the tooltip names the
axis' range (``axis 60–80%``) next to the values.

Several lines share one axis, over all their values. The n-th line has the n-th colour and dash
of :mod:`chart_marks` (the first solid), so a line reads the same in every row of a page and in
grey print; :func:`line_key` draws its sample for a legend.

Edge cases: ``None`` values are gaps; a line with no value is not drawn and keeps its style; no
value at all draws an empty box whose tooltip says "no data"; one value is a dot in the middle.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from markupsafe import Markup, escape

from retrieval_eval.formats.numbers import pct
from retrieval_eval.webui.chart_marks import (
    BASELINE_COLOUR,
    DASHES,
    INVALID_COLOUR,
    PALETTE,
    REGRESSION_COLOUR,
    labels_glyph,
    marker_path,
    polylines,
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


def _style(slot: int) -> tuple[str, str]:
    """The colour and the dash array of the ``slot``-th line."""
    return PALETTE[slot % len(PALETTE)], DASHES[slot % len(DASHES)]


def line_key(slot: int) -> Markup:
    """A legend's sample of the ``slot``-th line: a short stroke in its colour and dash."""
    colour, dash = _style(slot)
    (stroke,) = polylines([(1.0, 5.0), (17.0, 5.0)], colour, "1.5", dash)
    return Markup(
        f'<svg width="18" height="10" viewBox="0 0 18 10" aria-hidden="true">{stroke}</svg>'
    )


def sparkline(
    values: Sequence[float | None] | Mapping[str, Sequence[float | None]],
    *,
    width: int = 110,
    height: int = 28,
    label: str = "recent runs",
    marks: Sequence[int] = (),
    baselines: Sequence[int] = (),
    invalid: Sequence[int] = (),
    dead_labels: Sequence[int] = (),
) -> Markup:
    """A small trend of rates, oldest left, on the axis of :func:`spark_range`: one line, or a
    line per name of a mapping (``{"top-1": [...], "top-5": [...]}``), in its order.

    Each line's last point is dotted; regressions are red dots, accepted baselines blue
    diamonds, invalid runs grey hollow circles and runs whose labels need attention amber
    outlined triangles, on the first line with a value there. The tooltip lists the values
    (each line's after its name) and the axis' range.
    """
    named = isinstance(values, Mapping)
    lines = dict(values) if isinstance(values, Mapping) else {"": values}
    slots = {name: slot for slot, name in enumerate(lines)}
    drawn = {name: line for name, line in lines.items() if any(v is not None for v in line)}
    low, high = spark_range([v for line in drawn.values() for v in line])

    def listed(line: Sequence[float | None]) -> str:
        return ", ".join(pct(v, digits=0) for v in line if v is not None)

    shown = [f"{name} {listed(line)}" if named else listed(line) for name, line in drawn.items()]
    axis = f" (axis {low * 100:.0f}–{pct(high, digits=0)})" if drawn else ""
    parts = [
        f'<svg class="spark" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(label)}" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{escape(label)}: {escape('; '.join(shown) or 'no data')}{axis}</title>",
    ]
    count = max((len(line) for line in lines.values()), default=0)

    def x_at(i: int) -> float:
        return 4 + (width - 8) * (0.5 if count <= 1 else i / (count - 1))

    def y_at(v: float) -> float:
        return 4 + (height - 8) * (1 - min(max((v - low) / (high - low), 0.0), 1.0))

    def marked(i: int) -> float | None:
        """Where a run's mark sits: the first line's value at ``i`` that there is."""
        found = (line[i] for line in drawn.values() if 0 <= i < len(line))
        return next((v for v in found if v is not None), None)

    for name, line in drawn.items():
        colour, dash = _style(slots[name])
        tag = f' data-line="{escape(name)}"' if named else ""
        points = [None if v is None else (x_at(i), y_at(v)) for i, v in enumerate(line)]
        parts += polylines(points, colour, "1.5", dash, tag)
        i, v = [(i, v) for i, v in enumerate(line) if v is not None][-1]
        parts.append(f'<circle cx="{x_at(i):.1f}" cy="{y_at(v):.1f}" r="2" fill="{colour}"/>')

    kinds = (
        (marks, f'r="2.5" fill="{REGRESSION_COLOUR}" class="spark-regression"'),
        (invalid, f'r="2.5" fill="#fff" stroke="{INVALID_COLOUR}" class="spark-invalid"'),
    )
    for positions, attributes in kinds:
        for i in positions:
            if (value := marked(i)) is not None:
                parts.append(f'<circle cx="{x_at(i):.1f}" cy="{y_at(value):.1f}" {attributes}/>')
    for i in baselines:
        if (value := marked(i)) is not None:
            shape = marker_path("diamond", x_at(i), y_at(value), 3.5)
            parts.append(f'<path class="spark-baseline" d="{shape}" fill="{BASELINE_COLOUR}"/>')
    for i in dead_labels:
        if (value := marked(i)) is not None:
            glyph = labels_glyph(x_at(i), y_at(value), 3.5)
            parts.append(f'<g class="spark-labels">{glyph}</g>')
    parts.append("</svg>")
    return Markup("".join(parts))

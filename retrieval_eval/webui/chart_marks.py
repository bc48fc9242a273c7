"""The small pieces of the SVG charts: colours, marker shapes, gaps, and legend samples.

Shared by :mod:`charts` (line charts) and :mod:`sparkline`. Marker shapes are SVG paths centred
on a point, so every shape reads the same at any size and needs no font.
"""

from __future__ import annotations

from dataclasses import dataclass

from markupsafe import escape

# Colour-blind-safe palette (Okabe–Ito), enough for the slices of a typical golden set.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#000000", "#F0E442"]
DASHES = ["", "7 4", "2 3", "10 3 2 3", "4 2", "12 4"]  # per series, after the colour
MARKERS = ["circle", "square", "triangle", "diamond", "triangle-down", "cross"]
REGRESSION_COLOUR = "#C62828"
BASELINE_COLOUR = "#1f5fa8"
INVALID_COLOUR = "#555555"
LABELS_COLOUR = "#8a5a00"  # labels need attention: the dashboard's warning colour
LABELS_TEXT = "labels need attention (dead ids)"
LABEL_CHANGE_COLOUR = "#6a3d9a"
LABEL_CHANGE_TEXT = "labels changed (set edited or promoted)"


def segments(points: list[tuple[float, float] | None]) -> list[list[tuple[float, float]]]:
    """Split a point list at gaps, so a missing value breaks the line."""
    runs: list[list[tuple[float, float]]] = [[]]
    for point in points:
        if point is None:
            if runs[-1]:
                runs.append([])
        else:
            runs[-1].append(point)
    return [run for run in runs if run]


def polylines(
    points: list[tuple[float, float] | None],
    colour: str,
    width: str,
    dash: str = "",
    extra: str = "",
) -> list[str]:
    """A line through ``points``: a ``<polyline>`` per run between gaps (:func:`segments`) of two
    points or more, in ``colour`` and ``width``, dashed by ``dash`` ("": solid); ``extra`` adds
    attributes (``' data-line="top-5"'``)."""
    dashed = f' stroke-dasharray="{dash}"' if dash else ""
    out = []
    for run in segments(points):
        if len(run) > 1:
            coords = " ".join(f"{x:.1f},{y:.1f}" for x, y in run)
            out.append(
                f'<polyline{extra} points="{coords}" fill="none" stroke="{colour}" '
                f'stroke-width="{width}"{dashed}/>'
            )
    return out


def marker_path(shape: str, x: float, y: float, r: float) -> str:
    """An SVG path of a marker of radius ``r`` centred on (x, y)."""
    if shape == "square":
        r *= 0.85
        return f"M{x - r:.1f},{y - r:.1f}h{2 * r:.1f}v{2 * r:.1f}h{-2 * r:.1f}Z"
    if shape in ("triangle", "triangle-down"):
        s = 1 if shape == "triangle" else -1
        return (
            f"M{x:.1f},{y - s * r:.1f}L{x + r:.1f},{y + s * r * 0.8:.1f}"
            f"L{x - r:.1f},{y + s * r * 0.8:.1f}Z"
        )
    if shape == "diamond":
        return f"M{x:.1f},{y - r:.1f}L{x + r:.1f},{y:.1f}L{x:.1f},{y + r:.1f}L{x - r:.1f},{y:.1f}Z"
    if shape == "cross":
        return (
            f"M{x - r:.1f},{y - r:.1f}L{x + r:.1f},{y + r:.1f}"
            f"M{x - r:.1f},{y + r:.1f}L{x + r:.1f},{y - r:.1f}"
        )
    return (  # circle
        f"M{x - r:.1f},{y:.1f}a{r:.1f},{r:.1f} 0 1,0 {2 * r:.1f},0"
        f"a{r:.1f},{r:.1f} 0 1,0 {-2 * r:.1f},0Z"
    )


def labels_glyph(x: float, y: float, r: float = 5) -> str:
    """A run whose labels need attention: an outlined warning triangle (a point drawn under it,
    a regression's red dot on a sparkline, stays visible)."""
    return (
        f'<path d="{marker_path("triangle", x, y, r)}" fill="none" stroke="{LABELS_COLOUR}" '
        'stroke-width="1.6" stroke-linejoin="round"/>'
    )


@dataclass
class LegendEntry:
    """One legend entry: ``kind`` is series, band, regression, baseline, invalid or labels."""

    kind: str
    text: str
    colour: str = ""
    dash: str = ""
    marker: str = "circle"


def legend_entry(entry: LegendEntry, x: float, y: float) -> str:
    """The entry's sample (line, marker, band or mark glyph) and its text, baseline at ``y``."""
    mid = y - 4
    if entry.kind == "series":
        dash = f' stroke-dasharray="{entry.dash}"' if entry.dash else ""
        sample = (
            f'<line x1="{x:.0f}" x2="{x + 24:.0f}" y1="{mid}" y2="{mid}" stroke="{entry.colour}" '
            f'stroke-width="2.5"{dash}/>'
            f'<path d="{marker_path(entry.marker, x + 12, mid, 3.6)}" fill="{entry.colour}" '
            f'stroke="{entry.colour}" stroke-width="1.5"/>'
        )
    elif entry.kind == "band":
        sample = (
            f'<rect x="{x:.0f}" y="{mid - 5}" width="24" height="10" '
            f'fill="{entry.colour}" fill-opacity="0.2"/>'
        )
    elif entry.kind == "regression":
        sample = (
            f'<text x="{x + 12:.0f}" y="{y}" text-anchor="middle" fill="{REGRESSION_COLOUR}" '
            'font-weight="700">▼</text>'
        )
    elif entry.kind == "baseline":
        sample = f'<path d="{marker_path("diamond", x + 12, mid, 5)}" fill="{BASELINE_COLOUR}"/>'
    elif entry.kind == "labels":
        sample = labels_glyph(x + 12, mid)
    elif entry.kind == "label_change":
        sample = (
            f'<line x1="{x + 12:.0f}" x2="{x + 12:.0f}" y1="{mid - 6}" y2="{mid + 6}" '
            f'stroke="{LABEL_CHANGE_COLOUR}" stroke-width="2" stroke-dasharray="4 2"/>'
        )
    else:
        sample = (
            f'<path d="{marker_path("cross", x + 12, mid, 5)}" stroke="{INVALID_COLOUR}" '
            'stroke-width="2" fill="none"/>'
        )
    text = f'<text x="{x + 30:.0f}" y="{y}">{escape(entry.text)}</text>'
    return f'<g class="legend-entry" data-kind="{entry.kind}">{sample}{text}</g>'

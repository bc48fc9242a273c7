"""The axes of the line charts: tick labels that never repeat and never overlap.

x axis: a label may hold two lines separated by ``\\n`` (the run id over its date). Labels that
repeat get `` ·2``, `` ·3``... (:func:`unique_labels`), so two runs in the same minute still read
apart even without their ids. When not every label fits the plot's width, every n-th is shown
(:func:`tick_positions`), always the first and the newest, each position at most once.

y axis: evenly spaced ticks from 0 to the top, each written with as many decimals as the tick
step needs (:func:`y_ticks`), so a latency axis of hundredths of a millisecond reads
``0, 0.005, 0.01, 0.015, 0.02`` rather than ``0, 0.01, 0.01, 0.01, 0.02``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from markupsafe import escape

from retrieval_eval.formats.numbers import pct

CHAR_W = 6.6  # average glyph width of the 12 px system font, for the layout
Scale = Callable[[int], float]  # x position of run i


MOST_DECIMALS = 9  # a tick step finer than 1e-9 is written rounded


def step_decimals(step: float) -> int:
    """The fewest decimals that write ``step`` (and so each multiple of it) exactly:
    0.25 -> 2, 0.005 -> 3, 6.25 -> 2, 20 -> 0."""
    for decimals in range(MOST_DECIMALS + 1):
        if math.isclose(round(step, decimals), step, rel_tol=1e-9, abs_tol=0.0):
            return decimals
    return MOST_DECIMALS


def y_ticks(top: float, percent: bool, intervals: int = 4) -> list[tuple[float, str]]:
    """(value, label) of the ticks at 0, 1/``intervals``... of ``top``, the labels distinct: a
    rate in whole per cents, any other value with the decimals its step needs, zeros trimmed."""
    step = top / intervals
    values = [step * i for i in range(intervals + 1)]
    if percent:
        return [(v, pct(v, digits=0)) for v in values]
    decimals = step_decimals(step)
    return [(v, f"{v:,.{decimals}f}".rstrip("0").rstrip(".") if decimals else f"{v:,.0f}")
            for v in values]  # fmt: skip


def unique_labels(labels: Sequence[str]) -> list[str]:
    """``labels`` with every repeat suffixed `` ·2``, `` ·3``... (in order), so none repeats."""
    seen: dict[str, int] = {}
    out = []
    taken = set(labels)
    for label in labels:
        count = seen.get(label, 0) + 1
        seen[label] = count
        name = label
        while count > 1 and (name := f"{label} ·{count}") in taken:
            count += 1
        taken.add(name)
        out.append(name)
    return out


def tick_positions(labels: Sequence[str], room: float) -> list[int]:
    """Which x positions get a label on a plot ``room`` pixels wide: every n-th, the first and
    the newest always, each at most once, spaced so that no two labels overlap.

    The end labels are anchored inwards (they would be clipped otherwise), so the gap next to
    them must hold one and a half labels; every gap is kept that wide. Only a plot too narrow
    for two labels shows the first and the newest overlapping.
    """
    count = len(labels)
    if count <= 1:
        return list(range(count))
    widest = max(len(line) for label in labels for line in label.split("\n"))
    gap = 1.5 * (widest * CHAR_W + 10)
    unit = room / (count - 1)  # pixels between neighbouring runs
    step = max(1, math.ceil(gap / unit))
    shown = list(range(0, count, step))
    if shown[-1] != count - 1:
        # the newest run is always labelled; it replaces neighbours that would collide with it
        while len(shown) > 1 and (count - 1 - shown[-1]) * unit < gap:
            shown.pop()
        shown.append(count - 1)
    return shown


def x_labels(labels: Sequence[str], x_at: Scale, y: float, room: float) -> list[str]:
    """The shown tick labels (see :func:`tick_positions`), one ``<text>`` each, its lines as
    ``<tspan>``; the end labels are anchored inwards so they are not clipped at the edges."""
    count = len(labels)
    out = []
    for i in tick_positions(labels, room):
        anchor = "middle"
        if count > 1 and i == 0:
            anchor = "start"
        elif count > 1 and i == count - 1:
            anchor = "end"
        x = f"{x_at(i):.1f}"
        lines = "".join(
            f'<tspan x="{x}" dy="{0 if n == 0 else 13}">{escape(line)}</tspan>'
            for n, line in enumerate(labels[i].split("\n"))
        )
        out.append(
            f'<text class="tick" x="{x}" y="{y:.1f}" text-anchor="{anchor}" fill="#555">'
            f"{lines}</text>"
        )
    return out

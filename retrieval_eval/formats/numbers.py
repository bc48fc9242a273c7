"""How every report, alert and dashboard page writes a number.

Rates are percentages with one decimal (``81.2%``); changes of a rate are signed points
(``+1.2 pts``) and their intervals ``[-4.1, +2.0] pts``; p-values three significant digits;
latencies milliseconds with one decimal and thousands separators (``1,234.6 ms``). A value that
is missing (no rate, no baseline, no interval) is written :data:`MISSING` everywhere.
"""

from __future__ import annotations

from collections.abc import Sequence

MISSING = "–"


def pct(rate: float | None, digits: int = 1) -> str:
    """A rate: ``55.0%``."""
    return MISSING if rate is None else f"{rate * 100:.{digits}f}%"


def ci(interval: Sequence[float] | None) -> str:
    """A 95 % interval of a rate: ``[49.3%, 60.5%]``."""
    return MISSING if interval is None else f"[{pct(interval[0])}, {pct(interval[1])}]"


def pts(delta: float | None) -> str:
    """A change of a rate in signed points: ``-2.5 pts``."""
    return MISSING if delta is None else f"{signed_points(delta)} pts"


def signed_points(delta: float | None) -> str:
    """A change of a rate in signed points, without the unit: ``-2.5``."""
    return MISSING if delta is None else f"{delta * 100:+.1f}"


def pts_interval(interval: Sequence[float] | None) -> str:
    """A paired interval of a change in points: ``[-4.1, +2.0] pts``."""
    if interval is None:
        return MISSING
    return f"[{signed_points(interval[0])}, {signed_points(interval[1])}] pts"


def points(value: float | None, unit: str = "pts", digits: int = 1) -> str:
    """A size of a drop (a threshold, a detectable drop) in points: ``10.0 pts``."""
    return MISSING if value is None else f"{value * 100:.{digits}f} {unit}"


def p_value(p: float | None) -> str:
    """A p-value: ``0.0312``, ``1``, ``4.2e-07``."""
    return MISSING if p is None else f"{p:.3g}"


def change(ratio: float | None) -> str:
    """A relative change in whole percent, signed: ``+50%`` (p95 latency against a baseline)."""
    return MISSING if ratio is None else f"{ratio:+.0%}"


def ms(value: float | None) -> str:
    """A latency: ``1,234.6 ms``."""
    return MISSING if value is None else f"{value:,.1f} ms"


def decimal(value: float | None, digits: int = 4) -> str:
    """A mean metric (MRR, nDCG, recall): ``0.8125``."""
    return MISSING if value is None else f"{value:.{digits}f}"


def decimal_interval(interval: Sequence[float] | None, digits: int = 4) -> str:
    """An interval of a mean metric: ``[0.5000, 0.8125]``."""
    if interval is None:
        return MISSING
    return f"[{decimal(interval[0], digits)}, {decimal(interval[1], digits)}]"

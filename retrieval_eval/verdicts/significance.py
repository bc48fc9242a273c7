"""The significance tests a verdict and the leaderboard report: McNemar's exact test on flipped
questions and Holm's adjustment across the tests made together."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (no scipy).

    ``p = min(1, 2 * P(X <= min(b, c)))`` with ``X ~ Binomial(b + c, 1/2)``; 1.0 when there are no
    discordant pairs. Exact rational arithmetic, so large counts do not underflow midway; each
    binomial coefficient comes from the one before (``C(n, i) = C(n, i-1)·(n-i+1)/i``, exact in
    integers), one multiplication and division per term rather than a fresh coefficient each,
    which keeps large discordant counts cheap (a leaderboard of large sets tests N - 1 such pairs).
    """
    if b < 0 or c < 0:
        raise ValueError("flip counts must be zero or more")
    n = b + c
    if n == 0:
        return 1.0
    term = total = 1  # C(n, 0)
    for i in range(1, min(b, c) + 1):
        term = term * (n - i + 1) // i
        total += term
    return float(min(Fraction(1), 2 * Fraction(total, 2**n)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (from 0) of m is multiplied by m − i, capped at 1, and
    never allowed below the adjusted value before it (so the adjustment keeps the order).
    """
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for i, index in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - i) * p_values[index]))
        adjusted[index] = running
    return adjusted

"""Rank-biased overlap of two rankings (Webber, Moffat & Zobel 2010, "A similarity measure for
indefinite rankings", TOIS 28(4)), for lists of DISTINCT ids of uneven lengths.

``rbo(S, L, p)`` gives the extrapolated RBO_ext (the paper's Eq. 32) with its bounds: RBO_min
(every unseen item disagrees) and RBO_max (every unseen item agrees as far as the seen items
allow), so ``minimum <= ext <= maximum`` and ``residual = maximum - minimum``; and, counted on
the way, how many items the two lists share (``overlap``, X_l) and their first three share
(``overlap3``, X_3): Jaccard and the top-3 overlap of a replay cost nothing more.
Edge cases: two empty lists are identical (1.0, residual 0); one empty and one not share
nothing (RBO_ext 0.0, the ``rbo`` package's convention), with bounds [0, 1].
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Rbo:
    """RBO_ext with its lower and upper bounds."""

    ext: float
    minimum: float
    maximum: float
    overlap: int = 0  # |S ∩ L|: the items both lists hold
    overlap3: int = 0  # |S_3 ∩ L_3|: the items both top 3s hold
    sizes: int = 0  # |S| + |L|

    @property
    def jaccard(self) -> float:
        """|S ∩ L| / |S ∪ L| of the two (distinct) lists; 1.0 when both are empty."""
        union = self.sizes - self.overlap
        return self.overlap / union if union else 1.0

    @property
    def residual(self) -> float:
        return self.maximum - self.minimum


def _tail_harmonic(p: float, n: int) -> float:
    """sum_{d > n} p^d / d."""
    head = 0.0
    power = 1.0
    for d in range(1, n + 1):
        power *= p
        head += power / d
    return -math.log1p(-p) - head


def rbo(first: Sequence[str], second: Sequence[str], p: float = 0.9) -> Rbo:
    """RBO of two rankings of distinct ids at persistence ``p`` (0 < p < 1)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"RBO persistence p must be between 0 and 1 (exclusive), not {p!r}")
    short, long_ = (first, second) if len(first) <= len(second) else (second, first)
    s, l = len(short), len(long_)  # noqa: E741 (the paper's names)
    if l == 0:
        return Rbo(1.0, 1.0, 1.0)
    if s == 0:
        return Rbo(0.0, 0.0, 1.0, sizes=l)
    short_seen: set[str] = set()
    long_seen: set[str] = set()
    scale = (1.0 - p) / p
    overlap = 0  # X_d, the size of the intersection of both prefixes of depth d
    weighted = 0.0  # sum_{d<=l} X_d p^d / d (Eq. 32's first sum; X_d for d > s is S_s with L_d)
    disjoint = 0.0  # sum_{s<d<=l} X_s (d - s) p^d / (s d) (Eq. 32's second sum)
    upper = 0.0  # sum_{d<=l} max X_d p^d / d
    power = 1.0
    x_s = 0
    x_3 = 0
    for d in range(1, l + 1):
        power *= p
        item_l = long_[d - 1]
        if d <= s:
            item_s = short[d - 1]
            if item_s == item_l:
                overlap += 1
            else:
                overlap += (item_s in long_seen) + (item_l in short_seen)
            short_seen.add(item_s)
            long_seen.add(item_l)
            if d == s:
                x_s = overlap
            most = overlap
        else:
            overlap += item_l in short_seen
            disjoint += x_s * (d - s) * power / (s * d)
            most = overlap + (d - s)
        weighted += overlap * power / d
        upper += most * power / d
        if d == 3:
            x_3 = overlap
    x_l = overlap
    if l < 3:
        x_3 = x_l
    ext = scale * (weighted + disjoint) + ((x_l - x_s) / l + x_s / s) * power
    # Below: beyond depth l nothing more agrees (X_d = X_l) ...
    minimum = scale * (weighted + x_l * _tail_harmonic(p, l))
    # ... above: every unseen item agrees, X_d = X_l + 2d - s - l up to f = s + l - X_l, then d.
    f = s + l - x_l
    power_d = power
    for d in range(l + 1, f + 1):
        power_d *= p
        upper += (x_l + 2 * d - s - l) * power_d / d
    upper += power_d * p / (1.0 - p)  # sum_{d > f} p^d: there X_d = d
    maximum = scale * upper
    return Rbo(_clip(ext), _clip(minimum), _clip(maximum), x_l, x_3, s + l)


def _clip(value: float) -> float:
    """Floating error may carry a bound a hair past [0, 1]."""
    return min(1.0, max(0.0, value))


def jaccard(first: Sequence[str], second: Sequence[str], k: int) -> float:
    """|A_k ∩ B_k| / |A_k ∪ B_k| of the top-k ids; 1.0 when both are empty."""
    a, b = set(first[:k]), set(second[:k])
    union = a | b
    return len(a & b) / len(union) if union else 1.0


def overlap_at(first: Sequence[str], second: Sequence[str], k: int = 3) -> int:
    """How many ids the two top-k share (0 to k)."""
    return len(set(first[:k]) & set(second[:k]))


def top1_changed(first: Sequence[str], second: Sequence[str]) -> bool:
    """The first id differs (one list empty and the other not counts as a change)."""
    return (first[0] if first else None) != (second[0] if second else None)

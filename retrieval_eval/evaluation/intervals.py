"""95 % confidence intervals for hit rates and for the change between two runs (pure Python).

- :func:`wilson`: the Wilson score interval for a proportion, ``k`` hits out of ``n``
  (Wilson 1927). With ``p = k/n`` and ``z = 1.959963984540054`` (the 97.5 % normal quantile)::

      centre    = (p + z²/2n) / (1 + z²/n)
      half      = z · sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n)
      interval  = [centre - half, centre + half]

  It never leaves [0, 1], is not degenerate at ``k = 0`` or ``k = n`` (0 of 20 gives
  [0 %, 16.1 %]), and is what statsmodels' ``proportion_confint(method="wilson")`` gives
  (``tests/evaluation/test_intervals.py`` checks to 1e-12).

- :func:`paired_difference`: the interval for ``p1 - p2`` when both proportions are measured on
  the SAME questions (a run and its baseline): Newcombe's hybrid score ("square-and-add")
  interval for paired data, method 10 of Newcombe (1998), *Improved confidence intervals for the
  difference between binomial proportions based on paired data*, Statistics in Medicine 17,
  2635-2650. The paired 2×2 table is ``a`` (hit in both), ``b`` (hit in 1 only), ``c`` (hit in 2
  only), ``d`` (hit in neither); ``θ = (b - c)/n``. With Wilson intervals ``[l1, u1]`` for
  ``(a+b)/n`` and ``[l2, u2]`` for ``(a+c)/n``::

      L = θ - sqrt((p1-l1)² - 2φ(p1-l1)(u2-p2) + (u2-p2)²)
      U = θ + sqrt((p2-l2)² - 2φ(p2-l2)(u1-p1) + (u1-p1)²)

  where ``φ`` estimates the correlation of the two proportions: with ``A = ad - bc`` and ``P``
  the product of the four margins, ``φ = (A - n/2)/sqrt(P)`` when ``A > n/2``, 0 when
  ``0 <= A <= n/2``, ``A/sqrt(P)`` when ``A < 0``, and 0 when a margin is empty (Newcombe's
  continuity-corrected estimate, as in Fagerland, Lydersen & Laake, *Statistical Analysis of
  Contingency Tables*, 2017, ch. 8). It reproduces the paper's worked examples (Table II) to the
  four decimals printed there. It always contains ``θ``; swapping ``b`` and ``c`` mirrors it; with
  no discordant pair (``b = c = 0``) it is symmetric around 0 and not empty: n agreements still
  leave the size of a possible change uncertain.

Both return ``None`` when there is nothing to estimate (``n = 0``).
"""

from __future__ import annotations

from math import sqrt

Z95 = 1.959963984540054  # the standard normal's 97.5 % quantile: two-sided 95 %

Interval = tuple[float, float]


def wilson(k: int, n: int, z: float = Z95) -> Interval | None:
    """The Wilson score interval for ``k`` successes out of ``n`` (None when ``n`` is 0)."""
    if n < 0 or not 0 <= k <= n:
        raise ValueError(f"need 0 <= k <= n, got k={k}, n={n}")
    if n == 0:
        return None
    p = k / n
    z2 = z * z
    denom = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    # k = 0 and k = n touch 0 and 1 exactly (the formula leaves a rounding crumb there)
    low = 0.0 if k == 0 else max(0.0, centre - half)
    high = 1.0 if k == n else min(1.0, centre + half)
    return low, high


def rate_interval(rate: float | None, n: int) -> Interval | None:
    """:func:`wilson` for a proportion known as a rate over ``n`` (its hits: ``round(rate·n)``)."""
    if rate is None or n <= 0:
        return None
    return wilson(round(rate * n), n)


def paired_difference(a: int, b: int, c: int, d: int, z: float = Z95) -> Interval | None:
    """Newcombe's paired interval (method 10) for ``p1 - p2 = (b - c)/n``, ``n = a+b+c+d``.

    ``a``: success in both; ``b``: success in 1 only; ``c``: success in 2 only; ``d``: neither.
    """
    if min(a, b, c, d) < 0:
        raise ValueError("counts must be zero or more")
    n = a + b + c + d
    if n == 0:
        return None
    p1, p2 = (a + b) / n, (a + c) / n
    theta = (b - c) / n
    ci1, ci2 = wilson(a + b, n, z), wilson(a + c, n, z)
    assert ci1 is not None and ci2 is not None  # n > 0
    (l1, u1), (l2, u2) = ci1, ci2
    phi = _phi(a, b, c, d)
    low = theta - sqrt(max(0.0, (p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2))
    high = theta + sqrt(max(0.0, (p2 - l2) ** 2 - 2 * phi * (p2 - l2) * (u1 - p1) + (u1 - p1) ** 2))
    return max(-1.0, low), min(1.0, high)


def _phi(a: int, b: int, c: int, d: int) -> float:
    """Newcombe's continuity-corrected estimate of the correlation between the two proportions."""
    margins = (a + b) * (c + d) * (a + c) * (b + d)
    if margins == 0:
        return 0.0
    n = a + b + c + d
    agreement = a * d - b * c
    if agreement > n / 2:
        return (agreement - n / 2) / sqrt(margins)
    if agreement >= 0:
        return 0.0
    return agreement / sqrt(margins)

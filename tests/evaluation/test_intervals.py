"""The 95 % intervals: Wilson against statsmodels, Newcombe's paired interval against its paper."""

from __future__ import annotations

import random

import pytest
from statsmodels.stats.proportion import proportion_confint

from retrieval_eval.evaluation.intervals import Z95, paired_difference, rate_interval, wilson


def _cases() -> list[tuple[int, int]]:
    every = [(k, n) for n in range(1, 61) for k in range(n + 1)]  # k = 0 and k = n included
    rng = random.Random(20240611)
    large = [(k, n) for n in (100, 300, 1_000, 20_000, 10**6) for k in (0, 1, n - 1, n)]
    drawn = [(rng.randint(0, n), n) for n in (rng.randint(61, 10**6) for _ in range(300))]
    return every + large + drawn


def test_z_is_the_two_sided_95_quantile() -> None:
    from statistics import NormalDist

    assert NormalDist().inv_cdf(0.975) == pytest.approx(Z95, abs=1e-15)


def test_wilson_is_statsmodels_wilson_to_1e_12() -> None:
    cases = _cases()
    low, high = proportion_confint(
        [k for k, _ in cases], [n for _, n in cases], alpha=0.05, method="wilson"
    )
    for (k, n), expected_low, expected_high in zip(cases, low, high, strict=True):
        interval = wilson(k, n)
        assert interval is not None
        assert interval[0] == pytest.approx(expected_low, abs=1e-12), (k, n)
        assert interval[1] == pytest.approx(expected_high, abs=1e-12), (k, n)
        assert 0.0 <= interval[0] <= k / n <= interval[1] <= 1.0


def test_wilson_edges() -> None:
    assert wilson(0, 0) is None
    assert wilson(0, 20) == (0.0, pytest.approx(0.16112515805))  # not degenerate at k = 0
    assert wilson(20, 20) == (pytest.approx(1 - 0.16112515805), 1.0)  # nor at k = n
    for k, n in ((-1, 3), (4, 3), (0, -1)):
        with pytest.raises(ValueError):
            wilson(k, n)


def test_the_readme_worked_example() -> None:
    low, high = wilson(165, 300)  # type: ignore[misc]
    assert (round(low * 100, 1), round(high * 100, 1)) == (49.3, 60.5)
    assert low == pytest.approx(0.4934256045, abs=1e-10)
    assert high == pytest.approx(0.6053100984, abs=1e-10)


def test_rate_interval_reads_the_hits_back_from_the_rate() -> None:
    assert rate_interval(None, 10) is None
    assert rate_interval(0.5, 0) is None
    assert rate_interval(7 / 9, 9) == wilson(7, 9)
    assert rate_interval(165 / 300, 300) == wilson(165, 300)


# Newcombe (1998), Statistics in Medicine 17:2635-2650, Table II, method 10: the interval for
# p1 - p2 from the paired table (a: both, b: 1 only, c: 2 only, d: neither), to 4 decimals
NEWCOMBE_TABLE_II = [
    ((36, 12, 2, 0), (0.0569, 0.3404)),
    ((18, 12, 2, 18), (0.0562, 0.3290)),
    ((53, 0, 0, 1), (-0.0729, 0.0729)),
    ((0, 30, 0, 0), (0.8395, 1.0000)),
]


@pytest.mark.parametrize(("table", "expected"), NEWCOMBE_TABLE_II)
def test_paired_interval_reproduces_newcombes_examples(
    table: tuple[int, int, int, int], expected: tuple[float, float]
) -> None:
    interval = paired_difference(*table)
    assert interval is not None
    assert round(interval[0], 4) == expected[0]
    assert round(interval[1], 4) == expected[1]


def _tables(limit: int) -> list[tuple[int, int, int, int]]:
    return [
        (a, b, c, n - a - b - c)
        for n in range(1, limit + 1)
        for a in range(n + 1)
        for b in range(n + 1 - a)
        for c in range(n + 1 - a - b)
    ]


def test_paired_interval_contains_the_estimate_and_mirrors() -> None:
    for a, b, c, d in _tables(14):
        n = a + b + c + d
        interval = paired_difference(a, b, c, d)
        assert interval is not None
        low, high = interval
        assert -1.0 <= low <= (b - c) / n <= high <= 1.0, (a, b, c, d)
        mirrored = paired_difference(a, c, b, d)  # the two runs swapped
        assert mirrored is not None
        assert mirrored == (pytest.approx(-high, abs=1e-15), pytest.approx(-low, abs=1e-15))


def test_paired_interval_without_discordant_pairs_is_symmetric_around_zero() -> None:
    for a, d in ((0, 5), (5, 0), (3, 4), (100, 200), (299, 1)):
        low, high = paired_difference(a, 0, 0, d)  # type: ignore[misc]
        assert low < 0 < high
        assert low == pytest.approx(-high, abs=1e-15)
    # every question a hit in both runs: the margins are empty, so phi = 0 and the half-width is
    # the distance from 1 to the Wilson lower bound of n out of n
    for n in (1, 10, 300):
        wilson_low = wilson(n, n)[0]  # type: ignore[index]
        assert paired_difference(n, 0, 0, 0) == (
            pytest.approx(-(1 - wilson_low), abs=1e-15),
            pytest.approx(1 - wilson_low, abs=1e-15),
        )


def test_paired_interval_narrows_with_more_questions() -> None:
    widths = []
    for scale in (1, 4, 16, 64):
        low, high = paired_difference(40 * scale, 6 * scale, 2 * scale, 52 * scale)  # type: ignore[misc]
        widths.append(high - low)
    assert widths == sorted(widths, reverse=True)


def test_paired_interval_edges() -> None:
    assert paired_difference(0, 0, 0, 0) is None
    with pytest.raises(ValueError):
        paired_difference(1, -1, 0, 0)


def test_the_readme_paired_example() -> None:
    # 165 of 300 before, 157 now: 153 hit in both, 4 only now, 12 only before, 131 in neither
    low, high = paired_difference(153, 4, 12, 131)  # type: ignore[misc]
    assert (round(low * 100, 1), round(high * 100, 1)) == (-5.3, 0.0)
    assert low < (4 - 12) / 300 < high
    assert [round(bound * 100, 1) for bound in wilson(157, 300)] == [46.7, 57.9]  # type: ignore[union-attr]

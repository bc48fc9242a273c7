"""Agreement between raters against statsmodels (Cohen's κ) and the krippendorff package (α)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from retrieval_eval.labels.agreement import cohen_kappa, krippendorff_alpha, merged_grade


def table(first: list[int], second: list[int]) -> np.ndarray:
    low = min(first + second)
    size = max(first + second) - low + 1
    counts = np.zeros((size, size))
    for a, b in zip(first, second, strict=True):
        counts[a - low, b - low] += 1
    return counts


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_statsmodels_on_seeded_cases(weights) -> None:
    from statsmodels.stats.inter_rater import cohens_kappa

    rng = random.Random(11)
    for _ in range(200):
        n = rng.randint(2, 40)
        first = [rng.randint(0, 3) for _ in range(n)]
        # the second rater agrees often, drifts by one grade sometimes
        second = [
            a if rng.random() < 0.6 else max(0, min(3, a + rng.choice([-1, 1, 2]))) for a in first
        ]
        ours = cohen_kappa(first, second, weights)
        wt = {None: None, "linear": "linear", "quadratic": "quadratic"}[weights]
        theirs = cohens_kappa(table(first, second), wt=wt, return_results=False)
        if math.isnan(ours):
            assert len(set(first) | set(second)) == 1 or not np.isfinite(theirs)
        else:
            assert ours == pytest.approx(float(theirs), abs=1e-9)


def test_kappa_edge_cases() -> None:
    assert cohen_kappa([1, 2, 0], [1, 2, 0]) == 1.0
    assert math.isnan(cohen_kappa([2, 2], [2, 2]))  # chance explains everything
    assert math.isnan(cohen_kappa([], []))
    with pytest.raises(ValueError, match="same items"):
        cohen_kappa([1], [1, 2])


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval"])
def test_krippendorff_alpha_equals_the_krippendorff_package(level: str) -> None:
    import krippendorff

    rng = random.Random(5)
    for _ in range(80):
        raters, items = rng.randint(2, 5), rng.randint(2, 25)
        truth = [rng.randint(0, 3) for _ in range(items)]
        matrix = np.full((raters, items), np.nan)
        units: dict[int, dict[int, int]] = {}
        for r in range(raters):
            for i in range(items):
                if rng.random() < 0.7:  # not every rater grades every item
                    grade = truth[i] if rng.random() < 0.7 else rng.randint(0, 3)
                    matrix[r, i] = grade
                    units.setdefault(i, {})[r] = grade
        ours = krippendorff_alpha(units, level)  # type: ignore[arg-type]
        pairable = [u for u in units.values() if len(u) >= 2]
        if len({g for u in pairable for g in u.values()}) < 2:
            assert math.isnan(ours)
            continue
        theirs = krippendorff.alpha(
            reliability_data=matrix, level_of_measurement=level, value_domain=[0, 1, 2, 3]
        )
        assert ours == pytest.approx(theirs, abs=1e-9)


def test_two_raters_alpha_and_nominal_kappa_tell_the_same_story() -> None:
    first, second = [0, 1, 2, 3, 3, 1], [0, 1, 2, 3, 2, 1]
    units = {i: {"a": a, "b": b} for i, (a, b) in enumerate(zip(first, second, strict=True))}
    assert krippendorff_alpha(units, "nominal") > 0.6 and cohen_kappa(first, second) > 0.6


def test_merged_grade_is_the_lower_median() -> None:
    assert merged_grade([3]) == 3
    assert merged_grade([0, 3]) == 0
    assert merged_grade([1, 2, 3]) == 2
    assert merged_grade([3, 1, 2, 2]) == 2
    with pytest.raises(ValueError):
        merged_grade([])

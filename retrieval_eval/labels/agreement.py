"""How far raters agree on graded judgments, and the one rule that merges their grades.

- :func:`cohen_kappa`: two raters over the items both graded, κ = (p_o - p_e) / (1 - p_e),
  unweighted, or weighted linearly or quadratically for ordinal grades (Cohen 1960, 1968).
  1.0 is perfect agreement, 0 what chance gives; NaN when chance already explains every grade
  (both raters gave one and the same grade throughout).
- :func:`krippendorff_alpha`: any number of raters, items graded by some of them (Krippendorff
  2011, "Computing Krippendorff's alpha-reliability"), with the nominal, ordinal or interval
  difference; items graded by fewer than two raters do not count. NaN without such an item, or
  when every pairable grade is one value.
- :func:`merged_grade`: the median grade; with an even number of grades, the LOWER middle one
  (a tie between "relevant" and "not" counts as not, as unjudged documents do in pooling).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from typing import Literal

Weights = Literal["linear", "quadratic"] | None
Level = Literal["nominal", "ordinal", "interval"]


def cohen_kappa(first: Sequence[int], second: Sequence[int], weights: Weights = None) -> float:
    """Cohen's κ of two raters' grades of the same items, in the same order."""
    if len(first) != len(second):
        raise ValueError("both raters must grade the same items")
    if not first:
        return math.nan
    seen = set(first) | set(second)
    categories = list(range(min(seen), max(seen) + 1))  # the scale, grades no one gave too
    index = {c: i for i, c in enumerate(categories)}
    size = len(categories)
    observed = [[0.0] * size for _ in range(size)]
    for a, b in zip(first, second, strict=True):
        observed[index[a]][index[b]] += 1
    n = float(len(first))
    rows = [sum(r) / n for r in observed]
    cols = [sum(observed[i][j] for i in range(size)) / n for j in range(size)]
    span = max(size - 1, 1)

    def weight(i: int, j: int) -> float:  # disagreement weight of categories i, j
        if weights is None:
            return 0.0 if i == j else 1.0
        d = abs(i - j) / span
        return d if weights == "linear" else d * d

    disagree_observed = sum(
        weight(i, j) * observed[i][j] / n for i in range(size) for j in range(size)
    )
    disagree_expected = sum(
        weight(i, j) * rows[i] * cols[j] for i in range(size) for j in range(size)
    )
    if disagree_expected == 0:
        return math.nan
    return 1.0 - disagree_observed / disagree_expected


def krippendorff_alpha(
    units: Mapping[Hashable, Mapping[Hashable, int]], level: Level = "ordinal"
) -> float:
    """Krippendorff's α of ``units`` (item -> rater -> grade)."""
    pairable = [list(grades.values()) for grades in units.values() if len(grades) >= 2]
    values = sorted({v for grades in pairable for v in grades})
    if not pairable or len(values) < 2:
        return math.nan
    index = {v: i for i, v in enumerate(values)}
    size = len(values)
    coincidence = [[0.0] * size for _ in range(size)]
    for grades in pairable:
        m = len(grades)
        for a_pos, a in enumerate(grades):
            for b_pos, b in enumerate(grades):
                if a_pos != b_pos:
                    coincidence[index[a]][index[b]] += 1.0 / (m - 1)
    totals = [sum(row) for row in coincidence]
    n = sum(totals)

    def delta(c: int, k: int) -> float:
        if level == "nominal":
            return 0.0 if c == k else 1.0
        if level == "interval":
            return float(values[c] - values[k]) ** 2
        low, high = min(c, k), max(c, k)  # ordinal: the marginals between and at the ends
        between = sum(totals[g] for g in range(low, high + 1)) - (totals[low] + totals[high]) / 2
        return between * between

    observed = sum(coincidence[c][k] * delta(c, k) for c in range(size) for k in range(size))
    expected = sum(totals[c] * totals[k] * delta(c, k) for c in range(size) for k in range(size))
    if expected == 0:
        return math.nan
    return 1.0 - (n - 1) * observed / expected


# the rule merged_grade applies, in the words the CLI and the dashboard show
MERGE_RULE = (
    "each (question, document) keeps the median of its raters' grades (a rater's latest); "
    "an even count keeps the lower middle one"
)


def merged_grade(grades: Sequence[int]) -> int:
    """The grade a judged pair keeps: the median, the lower middle one for an even count."""
    if not grades:
        raise ValueError("no grades to merge")
    ordered = sorted(grades)
    return ordered[(len(ordered) - 1) // 2]

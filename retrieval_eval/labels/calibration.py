"""How far a model judge agrees with people, and whether it ranks retrievers as they do.

- :func:`agreement_figures`: over pairs graded by both, Cohen's κ with quadratic weights (the
  grades are ordinal, 0-3; :func:`retrieval_eval.labels.agreement.cohen_kappa`) and its
  percentile bootstrap interval (pairs resampled with replacement, seeded, so a calibration is
  reproducible), the confusion matrix (rows: people's grade, columns: the judge's) and, per
  people's grade, how often the judge gave the same one.
- :func:`ranking_tau`: Kendall's τ-b (:func:`scipy.stats.kendalltau`) between the retrievers'
  hit rates under people's labels and under the judge's: TREC's test of an automatic assessor
  (a judge may disagree on pairs and still rank systems alike, or the other way round).
- :func:`sample`: at most ``size`` pairs, drawn without replacement by ``seed``.
"""

from __future__ import annotations

import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

GRADES = (0, 1, 2, 3)
RESAMPLES = 1000
CONFIDENCE = 0.95
T = TypeVar("T")


@dataclass(frozen=True)
class Agreement:
    """A judge against people over the same pairs."""

    pairs: int
    kappa: float | None  # None: undefined (one grade throughout, or no pair)
    kappa_low: float | None
    kappa_high: float | None
    confidence: float
    confusion: list[list[int]]  # [people's grade][judge's grade]
    per_grade: dict[int, float | None] = field(default_factory=dict)  # exact agreement by grade
    exact: float | None = None  # the share of pairs given the same grade


def sample(items: Sequence[T], size: int | None, seed: int) -> list[T]:
    """``items`` whole when ``size`` is None or not smaller; else ``size`` of them by ``seed``,
    kept in their order."""
    if size is None or size >= len(items):
        return list(items)
    chosen = sorted(random.Random(seed).sample(range(len(items)), size))
    return [items[i] for i in chosen]


def agreement_figures(
    people: Sequence[int],
    judge: Sequence[int],
    *,
    seed: int = 0,
    resamples: int = RESAMPLES,
    confidence: float = CONFIDENCE,
) -> Agreement:
    """κ (quadratic) with its bootstrap interval, the confusion matrix and per-grade agreement."""
    import numpy as np

    from retrieval_eval.labels.agreement import cohen_kappa

    if len(people) != len(judge):
        raise ValueError("people and the judge must grade the same pairs")
    n = len(people)
    confusion = [[0] * len(GRADES) for _ in GRADES]
    for a, b in zip(people, judge, strict=True):
        confusion[a][b] += 1
    per_grade = {
        g: (confusion[g][g] / sum(confusion[g]) if sum(confusion[g]) else None) for g in GRADES
    }
    exact = sum(confusion[g][g] for g in GRADES) / n if n else None
    value = cohen_kappa(list(people), list(judge), "quadratic") if n else math.nan
    kappa = None if math.isnan(value) else value
    low = high = None
    if kappa is not None and resamples > 0:
        rng = np.random.default_rng(seed)
        codes = np.asarray(people, dtype=np.int64) * 4 + np.asarray(judge, dtype=np.int64)
        draws = codes[rng.integers(0, n, size=(resamples, n))]
        offsets = (np.arange(resamples, dtype=np.int64) * 16)[:, None]
        counts = np.bincount((draws + offsets).ravel(), minlength=16 * resamples)
        kappas = _kappas(counts.reshape(resamples, 4, 4).astype(float))
        kappas = kappas[~np.isnan(kappas)]
        if kappas.size:
            tail = (1 - confidence) / 2 * 100
            low, high = (float(v) for v in np.percentile(kappas, [tail, 100 - tail]))
    return Agreement(n, kappa, low, high, confidence, confusion, per_grade, exact)


def _kappas(tables):  # type: ignore[no-untyped-def]
    """Quadratic κ of each 4×4 table (numpy, one per bootstrap draw); NaN where undefined."""
    import numpy as np

    n = tables.sum(axis=(1, 2))[:, None, None]
    observed = tables / n
    rows = observed.sum(axis=2)
    cols = observed.sum(axis=1)
    expected = rows[:, :, None] * cols[:, None, :]
    i, j = np.indices((4, 4))
    weights = (i - j) ** 2
    disagree_o = (weights * observed).sum(axis=(1, 2))
    disagree_e = (weights * expected).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(disagree_e > 0, 1 - disagree_o / disagree_e, np.nan)


def hit_rate(
    rankings: Mapping[str, Sequence[str]],
    grades: Mapping[tuple[str, str], int],
    depth: int,
    relevance_level: int = 1,
) -> float:
    """The share of questions with a document graded ``relevance_level`` or more in the top
    ``depth`` of its ranking (an unjudged document counts as not relevant)."""
    if not rankings:
        return math.nan
    hits = sum(
        1
        for question, ranked in rankings.items()
        if any(grades.get((question, doc), 0) >= relevance_level for doc in ranked[:depth])
    )
    return hits / len(rankings)


def ranking_tau(people: Mapping[str, float], judge: Mapping[str, float]) -> float | None:
    """Kendall's τ-b between the retrievers' figures under people's and the judge's labels;
    None with fewer than two retrievers or when it is undefined (all tied)."""
    from scipy.stats import kendalltau

    names = sorted(set(people) & set(judge))
    if len(names) < 2:
        return None
    tau = kendalltau([people[n] for n in names], [judge[n] for n in names]).statistic
    return None if tau is None or math.isnan(tau) else float(tau)

"""How small a drop can this set see? The minimum detectable drop of a paired comparison.

Method: McNemar's test, the test :mod:`retrieval_eval.verdicts.regression` reports for a run against its
baseline (the same questions answered twice, so the comparison is paired and only the questions
that flip carry information). The sample size of the normal approximation to McNemar's test
(Connor, 1987) is

    n = (z(1 - alpha/2) * sqrt(psi) + z(power) * sqrt(psi - d**2)) ** 2 / d**2

for a true drop ``d`` = p10 - p01 (hit -> miss minus miss -> hit, as shares of the set) and the
discordance ``psi`` = p10 + p01. We solve it for ``d`` at the set's ``n`` (bisection: ``n`` falls
as ``d`` grows), and for ``n`` at the configured threshold (the "questions needed").

The discordance is an assumption when nothing is stored, since no run has shown the drop yet: besides the net drop,
a share ``churn`` of the questions (config ``lint.churn``, default 0.05: one question in twenty
flips each way when a retriever changes) flips from miss to hit and as many more from hit to
miss, so ``psi = d + 2 * churn``. Recovery needs misses, so the churn is capped at the miss
rate ``1 - rate`` when the rate is known. With churn 0 (every flip is a loss) the figure is the
most optimistic any paired test can give.

When the store holds two or more runs of the evaluation with these labels, the churn is
measured instead, at each gated depth (:func:`measured_churn`): between each run and the next,
the share of their common questions that flipped the less frequent way (a net drop adds to the
other way, so the smaller of the two is the churn beside it), averaged over the pairs. The
report says which it used (``churn_from``); the rates are the newest stored run's at each depth.

A drop larger than the rate itself cannot happen: when even ``d = rate`` is not detectable the
figure is None ("no drop is detectable"). Thresholds are absolute rate drops, as in
:mod:`retrieval_eval.config.models`. A threshold below the detectable drop means a regression of the
threshold's size is indistinguishable from noise at this set size: the threshold rule will fire
on noise or miss real drops, and the report names the set size that would make it reliable.

``tests/lint/test_power.py`` checks the formula against a seeded Monte-Carlo simulation of
McNemar's test.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from itertools import pairwise
from statistics import NormalDist, fmean
from typing import TYPE_CHECKING, Protocol

from retrieval_eval.config.lookup import MAX_DROP
from retrieval_eval.lint.models import PowerFigure, PowerReport

if TYPE_CHECKING:
    from retrieval_eval.config.models import LintOptions, Thresholds
    from retrieval_eval.evaluation.results import QuestionResult, RunResult

_Z = NormalDist()


def _z(p: float) -> float:
    return _Z.inv_cdf(p)


def _discordance(drop: float, churn: float, rate: float | None) -> float:
    if rate is not None:
        churn = min(churn, max(1.0 - rate, 0.0))
    return drop + 2.0 * churn


def questions_needed(
    drop: float,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    churn: float = 0.05,
    rate: float | None = None,
) -> int:
    """The set size at which a true drop of ``drop`` is detected with ``power``."""
    if drop <= 0:
        raise ValueError("drop must be positive")
    return math.ceil(_needed_real(drop, alpha, power, churn, rate) - 1e-9)


def detectable_drop(
    n: int,
    *,
    alpha: float = 0.05,
    power: float = 0.8,
    churn: float = 0.05,
    rate: float | None = None,
) -> float | None:
    """The smallest true drop a set of ``n`` questions detects; None when none up to ``rate``."""
    if n < 1:
        return None
    ceiling = rate if rate is not None else 1.0
    if ceiling <= 0:
        return None

    def enough(drop: float) -> bool:
        return _needed_real(drop, alpha, power, churn, rate) <= n

    if not enough(ceiling):
        return None
    low, high = 0.0, ceiling
    for _ in range(60):
        mid = (low + high) / 2
        if mid > 0 and enough(mid):
            high = mid
        else:
            low = mid
    return high


def _needed_real(
    drop: float, alpha: float, power: float, churn: float, rate: float | None
) -> float:
    psi = _discordance(drop, churn, rate)
    root = _z(1 - alpha / 2) * math.sqrt(psi) + _z(power) * math.sqrt(max(psi - drop**2, 0.0))
    return root**2 / drop**2


class PowerSettings(Protocol):
    """What a power figure is computed at: the two-sided level, the power, the assumed churn
    (the config's ``lint:`` options, which the verdict's slice rule uses too)."""

    @property
    def alpha(self) -> float: ...

    @property
    def power(self) -> float: ...

    @property
    def churn(self) -> float: ...


def figure(
    scope: str,
    depth: int,
    n: int,
    rate: float | None,
    threshold: float,
    options: PowerSettings,
    churn: float | None = None,
) -> PowerFigure:
    """The power figure of one scope (``overall``, ``form=gap``, ...) of ``n`` questions at
    ``depth``: the drop it detects at ``rate`` and the questions needed to see ``threshold``
    (``churn`` None: ``options.churn``). Lint's figures and the verdict's slice rule (is a slice
    large enough to detect its threshold?) both come from here."""
    kwargs = {
        "alpha": options.alpha,
        "power": options.power,
        "churn": options.churn if churn is None else churn,
    }
    drop = detectable_drop(n, rate=rate, **kwargs)
    needed = questions_needed(threshold, rate=rate, **kwargs) if threshold > 0 else None
    return PowerFigure(
        metric=f"top{depth}",
        scope=scope,
        questions=n,
        rate=rate,
        threshold=threshold,
        detectable_drop=drop,
        questions_needed=needed,
    )


def figures(
    sizes: dict[str, int],
    rates: dict[tuple[str, str], float | None],
    thresholds: Thresholds,
    options: PowerSettings,
    depths: Sequence[int] = (1, 3),
    churn_at: Mapping[int, float] | None = None,
) -> list[PowerFigure]:
    """The figures at each of ``depths`` (top-1 and top-3 by default) for each scope
    (``overall``, ``form=gap``, ...) of ``sizes``; a depth in ``churn_at`` uses that measured
    churn, the others ``options.churn``. A slice's threshold is its own when the thresholds
    give it one (``thresholds.slices``)."""
    return [
        figure(
            scope,
            depth,
            n,
            rates.get((scope, f"top{depth}")),
            max_drop(thresholds, depth, scope),
            options,
            (churn_at or {}).get(depth),
        )
        for scope, n in sizes.items()
        for depth in depths
    ]


def measured_churn(
    runs: Sequence[Sequence[QuestionResult]], depths: Sequence[int]
) -> dict[int, float]:
    """The churn at each of ``depths`` over consecutive ``runs`` (each its questions, oldest
    first): per pair, the smaller of the miss → hit and hit → miss shares of their common
    questions; the mean over the pairs. Empty with fewer than two runs."""
    pairs = [
        (before, after)
        for before, after in pairwise(runs)
        if {q.id for q in before} & {q.id for q in after}
    ]
    if not pairs:
        return {}
    out = {}
    for depth in depths:
        shares = []
        for before, after in pairs:
            was = {q.id: q.hit_at(depth) for q in before}
            now = {q.id: q.hit_at(depth) for q in after if q.id in was}
            gained = sum(1 for qid, hit in now.items() if hit and not was[qid])
            lost = sum(1 for qid, hit in now.items() if was[qid] and not hit)
            shares.append(min(gained, lost) / len(now))
        out[depth] = fmean(shares)
    return out


def max_drop(thresholds: Thresholds, depth: int, scope: str = "overall") -> float:
    """A depth's threshold in ``scope``: ``Thresholds.max_drop``, or for the defaults ``show``
    passes (``max_top1_drop`` and ``max_top3_drop`` only) the key's value, else the default
    drop."""
    own = getattr(thresholds, "max_drop", None)
    if callable(own):
        return float(own(depth, scope))
    return float(getattr(thresholds, f"max_top{depth}_drop", MAX_DROP))


def run_power(
    result: RunResult, thresholds: Thresholds, options: LintOptions | None = None
) -> PowerReport:
    """The overall figures for a run at each of its gated depths: its question count and its
    own rates."""
    if options is None:  # imported only then: `show` passes its own and skips the config module
        from retrieval_eval.config.models import LintOptions

        options = LintOptions()
    rates = {("overall", f"top{d}"): result.hit_rate(d) for d in result.depths}
    sizes = {"overall": result.question_count}
    report = {
        "alpha": options.alpha,
        "power": options.power,
        "churn": options.churn,
        "rates_from": "this run",
        "figures": figures(sizes, rates, thresholds, options, result.depths),
    }
    return PowerReport.model_validate(report)

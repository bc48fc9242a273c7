"""The power formula against a seeded Monte-Carlo simulation of regression.py's McNemar test.

For a set of n questions and the formula's detectable drop d, draw many paired runs with
p10 = d + churn (hit -> miss) and p01 = churn (miss -> hit), judge each with
:func:`retrieval_eval.verdicts.regression.mcnemar_exact` at alpha 0.05, and count rejections. The
formula is the normal approximation; the exact test is a little conservative, so the simulated
power is within 0.05 of the target 0.8 (the simulation's own standard error is ~0.007).
"""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from retrieval_eval.config.models import LintOptions, Thresholds
from retrieval_eval.lint.power import detectable_drop, figures, questions_needed
from retrieval_eval.verdicts.regression import mcnemar_exact

DRAWS = 4000
TOLERANCE = 0.05


@cache
def _rejects(b: int, c: int) -> bool:
    return mcnemar_exact(b, c) < 0.05


@pytest.mark.parametrize(("n", "churn"), [(46, 0.05), (300, 0.05), (300, 0.0), (120, 0.1)])
def test_the_detectable_drop_has_the_stated_power_in_simulation(n: int, churn: float) -> None:
    drop = detectable_drop(n, churn=churn)
    assert drop is not None
    rng = np.random.default_rng(20261130)
    flips = rng.multinomial(n, [drop + churn, churn, 1 - drop - 2 * churn], size=DRAWS)
    power = np.mean([_rejects(int(b), int(c)) for b, c, _ in flips])
    assert abs(power - 0.8) <= TOLERANCE, (n, churn, drop, power)


def test_set_size_and_detectable_drop_are_inverse() -> None:
    for n in (46, 100, 300, 1000):
        drop = detectable_drop(n)
        assert drop is not None
        assert questions_needed(drop) <= n < questions_needed(drop * 0.98)
    assert detectable_drop(300) < detectable_drop(46)  # type: ignore[operator]


def test_no_drop_is_detectable_beyond_the_rate_and_churn_needs_misses() -> None:
    assert detectable_drop(46, rate=0.1) is None  # a 10 % rate cannot fall by the 23 points needed
    assert detectable_drop(0) is None
    # a 99 % rate leaves 1 % of misses to recover: less churn, a smaller detectable drop
    assert detectable_drop(300, rate=0.99) < detectable_drop(300, rate=0.5)  # type: ignore[operator]
    with pytest.raises(ValueError, match="positive"):
        questions_needed(0.0)


def test_the_run_report_shows_the_detectable_drop_next_to_the_thresholds() -> None:
    import json

    from lint.sets import golden, question
    from retrieval_eval.config.models import Thresholds
    from retrieval_eval.evaluation.results import RunSettings
    from retrieval_eval.evaluation.scoring import evaluate
    from retrieval_eval.lint.power import run_power
    from retrieval_eval.reports.report import render
    from retrieval_eval.retrievers.base import FunctionRetriever

    big = golden(*(question(f"q{i}", f"question {i}?", "match", f"d{i}.md") for i in range(46)))

    def three_in_four(question: str, limit: int) -> list[str]:
        number = int(question.split()[1].rstrip("?"))
        return [f"d{number}.md"] if number % 4 else []  # a 75 % hit rate

    result = evaluate(big, FunctionRetriever(three_in_four), RunSettings())
    power = run_power(result, Thresholds(max_top1_drop=0.1, max_top3_drop=0.3))
    drop = detectable_drop(46, rate=result.top1_hit_rate)
    assert drop is not None
    line = (
        f"top-1 (threshold 10.0 pts): at 46 questions a drop needs ≥ {drop * 100:.1f} pts to be "
        f"seen; {questions_needed(0.1, rate=result.top1_hit_rate)} questions to see 10 pts"
    )
    assert line in render(result, "text", power=power)
    assert line in render(result, "markdown", power=power)
    assert "top-3 (threshold 30.0 pts): at 46 questions a drop of " in render(
        result, "text", power=power
    )
    assert "Power:" not in render(result, "text")
    figures = json.loads(render(result, "json", power=power))["power"]["figures"]
    assert [f["threshold"] for f in figures] == [0.1, 0.3]


def test_the_power_line_says_what_it_means() -> None:
    """Not "detectable none at 16 questions (155 needed)": what drop is seen, and at what size
    the threshold would be."""
    from retrieval_eval.lint.models import PowerFigure
    from retrieval_eval.lint.render import figure_line, what_is_seen

    def figure(drop: float | None, needed: int | None, threshold: float = 0.1) -> PowerFigure:
        return PowerFigure(
            metric="top1",
            questions=46,
            threshold=threshold,
            detectable_drop=drop,
            questions_needed=needed,
        )

    assert figure_line(figure(0.232, 155)) == (
        "top-1 (threshold 10.0 pts): at 46 questions a drop needs ≥ 23.2 pts to be seen; "
        "155 questions to see 10 pts"
    )
    assert what_is_seen(figure(0.066, 155, threshold=0.25)) == (
        "at 46 questions a drop of 6.6 pts or more is seen (ok)"
    )
    assert what_is_seen(figure(None, 155), "points") == (
        "at 46 questions no drop is seen, not even one to 0%; 155 questions to see 10 points"
    )
    assert what_is_seen(figure(None, None, threshold=0.025)).endswith("; no set size sees 2.5 pts")


def test_a_slice_with_its_own_threshold_is_sized_at_it() -> None:
    """``thresholds.slices`` gives ``form=gap`` 50 points: lint sizes the slice at that, the
    rest at the section's ten points (the verdict judges the slice at the same figure)."""
    thresholds = Thresholds.model_validate({"slices": {"form=gap": {"max_top1_drop": 0.5}}})
    overall, gap = figures({"overall": 46, "form=gap": 20}, {}, thresholds, LintOptions(), [1])
    assert (overall.threshold, gap.threshold) == (0.10, 0.5)
    assert gap.questions_needed == questions_needed(0.5)
    assert overall.threshold_too_small and not gap.threshold_too_small

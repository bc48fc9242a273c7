"""The slice rule: a slice's drop beyond its threshold regresses only when it is significant
(McNemar on the slice's flips, Holm-adjusted across the slices and depths compared) or the
slice can see its threshold (lint's power figure); otherwise it is too small to judge. Per-slice
thresholds and the ``warn`` severity. p-values cross-checked with scipy and statsmodels."""

from __future__ import annotations

import pytest
from scipy.stats import binomtest
from statsmodels.stats.multitest import multipletests
from store.builders import as_stored, make_run, question

from retrieval_eval.config.models import Thresholds
from retrieval_eval.lint import power
from retrieval_eval.reports.verdict import (
    regression_reasons,
    render_verdict,
    verdict_document,
    verdict_summary,
    warning_reasons,
)
from retrieval_eval.verdicts.regression import Verdict, detect_regression

DEFAULT = Thresholds()


def _runs(
    slice_before: int, slice_after: int, size: int, others: int, others_before: int, gained: int
) -> tuple[list, list]:  # type: ignore[type-arg]
    """A slice ``tiny`` of ``size`` questions whose first ``slice_before`` hit, then the first
    ``slice_after``; ``others`` questions outside it of which ``others_before`` hit, then
    ``gained`` more."""
    before = [question(f"t{i}", i < slice_before, hard_class="tiny") for i in range(size)]
    after = [question(f"t{i}", i < slice_after, hard_class="tiny") for i in range(size)]
    before += [question(f"o{i:03d}", i < others_before) for i in range(others)]
    after += [question(f"o{i:03d}", i < others_before + gained) for i in range(others)]
    return before, after


def _verdict(before: list, after: list, thresholds: Thresholds = DEFAULT) -> Verdict:  # type: ignore[type-arg]
    return detect_regression(make_run(after, day=1), as_stored(make_run(before)), thresholds)


def test_a_six_question_slice_falling_50_points_is_too_small_to_judge() -> None:
    """The deployment's case: 6 questions, 3 of them lost, while the run's top-1 rose (50.0 %
    → 52.5 %). Exact binomial p = 0.25 on the slice's flips; Holm across the four slice tests
    (form=match and hard_class=tiny at top-1 and top-3) makes it 1; six questions detect no
    drop smaller than lint's figure, far above ten points: not a regression."""
    before, after = _runs(6, 3, 6, 34, 14, 4)
    verdict = _verdict(before, after)
    assert verdict.state == "no_regression" and not verdict.is_regression
    assert (verdict.top1_baseline, verdict.top1_current) == (0.5, 0.525)
    assert verdict.slice_regressions == []
    assert [(s.scope, s.metric) for s in verdict.slices_too_small] == [
        ("hard_class=tiny", "top1"),
        ("hard_class=tiny", "top3"),
    ]
    tiny = verdict.slices_too_small[0]
    assert (tiny.baseline, tiny.current, tiny.questions) == (1.0, 0.5, 6)
    assert tiny.p_value == pytest.approx(binomtest(3, 3, 0.5).pvalue)  # 3 flips, all one way
    # the family: form=match (40 questions: 3 lost, 4 gained) and tiny, at both depths
    family = [binomtest(3, 7, 0.5).pvalue] * 2 + [binomtest(3, 3, 0.5).pvalue] * 2
    assert tiny.p_holm == pytest.approx(multipletests(family, method="holm")[1][2]) == 1.0
    # the detectable drop is lint's figure for this slice (one function computes both)
    options = DEFAULT.power_options()
    (lint,) = power.figures(
        {"hard_class=tiny": 6}, {("hard_class=tiny", "top1"): 1.0}, DEFAULT, options, [1]
    )
    assert tiny.detectable_drop == lint.detectable_drop
    assert lint.threshold_too_small
    assert (
        "Too small to judge: hard_class=tiny top1 -50.0 pts (6 questions, Holm-adjusted p = 1)"
        in (verdict_summary(verdict))
    )
    assert verdict_summary(verdict).startswith("No regression against run")
    assert "Too small to judge: hard_class=tiny top1 100.0% → 50.0% (-50.0 pts); 6 questions" in (
        render_verdict(verdict)
    )


def test_a_slice_large_enough_to_see_its_threshold_regresses_without_significance() -> None:
    """300 questions see a 10-point drop (lint's figure ~6.6 points), so an 11-point drop
    regresses though, with heavy churn (150 lost, 117 gained), Holm leaves it at p > 0.05.
    Another 300 questions gain as many: the overall rate does not move."""
    before = [question(f"t{i:03d}", i < 150, hard_class="big") for i in range(300)]
    after = [question(f"t{i:03d}", i >= 183, hard_class="big") for i in range(300)]
    before += [question(f"o{i:03d}", False, hard_class="rest") for i in range(300)]
    after += [question(f"o{i:03d}", i < 33, hard_class="rest") for i in range(300)]
    verdict = _verdict(before, after)
    assert verdict.top1_delta == 0
    assert verdict.state == "regression"
    big = verdict.slice_regressions[0]
    assert (big.scope, big.metric, big.delta) == ("hard_class=big", "top1", pytest.approx(-0.11))
    assert big.p_value == pytest.approx(binomtest(117, 267, 0.5).pvalue)
    assert big.p_holm is not None and big.p_holm > 0.05
    assert big.detectable_drop is not None and big.detectable_drop < 0.10


def test_a_slice_of_its_own_threshold_and_severity() -> None:
    """``thresholds.slices`` gives a slice its own drop (looser or stricter) and severity."""
    before = [question(f"t{i:02d}", True, hard_class="tiny") for i in range(30)]
    after = [question(f"t{i:02d}", i >= 12, hard_class="tiny") for i in range(30)]  # -40 pts
    before += [question(f"o{i:02d}", False) for i in range(30)]
    after += [question(f"o{i:02d}", i < 12) for i in range(30)]
    assert _verdict(before, after).state == "regression"  # 12 flips one way: significant
    loose = Thresholds.model_validate({"slices": {"hard_class=tiny": {"max_top1_drop": 0.4}}})
    judged = _verdict(before, after, loose)
    assert [s.metric for s in judged.slice_regressions] == ["top3"]  # top-3 keeps ten points
    warn = Thresholds.model_validate({"slices": {"hard_class=tiny": {"severity": "warn"}}})
    warned = _verdict(before, after, warn)
    assert (warned.state, warned.slice_regressions) == ("no_regression", [])
    assert [(s.metric, s.severity) for s in warned.slice_warnings] == [
        ("top1", "warn"),
        ("top3", "warn"),
    ]
    assert warning_reasons(warned) == [
        "2 slice drops (hard_class=tiny top1 -40.0 pts, hard_class=tiny top3 -40.0 pts)"
    ]
    assert "Warnings only (severity warn): 2 slice drops" in verdict_summary(warned)
    text = render_verdict(warned)
    assert "Slice warning: hard_class=tiny top1 100.0% → 60.0% (-40.0 pts)" in text
    assert "Warned (severity warn, not a regression): 2 slice drops" in text


def test_an_overall_check_of_severity_warn_does_not_regress() -> None:
    before = [question(f"q{i:02d}", i < 16) for i in range(20)]
    after = [question(f"q{i:02d}", i < 10) for i in range(20)]  # -30 pts overall
    errors = _verdict(before, after)
    assert (
        errors.state == "regression"
        and regression_reasons(errors)[0] == "top-1 -30.0 pts (max drop 10.0 pts)"
    )
    warned = _verdict(before, after, Thresholds(severity="warn"))
    assert (warned.state, warned.is_regression, regression_reasons(warned)) == (
        "no_regression",
        False,
        [],
    )
    assert warning_reasons(warned)[0] == "top-1 -30.0 pts (max drop 10.0 pts)"
    assert warned.by_depth[1].dropped and warned.by_depth[1].severity == "warn"
    # a slice of its own severity error still fails the run when the overall only warns
    mixed = Thresholds.model_validate(
        {"severity": "warn", "slices": {"form=match": {"severity": "error"}}}
    )
    assert _verdict(before, after, mixed).state == "no_regression"  # 20 questions: too small
    many_before = [question(f"q{i:03d}", i < 160) for i in range(200)]
    many_after = [question(f"q{i:03d}", i < 100) for i in range(200)]
    both = _verdict(many_before, many_after, mixed)
    assert both.state == "regression" and warning_reasons(both)[0].startswith("top-1 -30.0 pts")
    assert regression_reasons(both) == [
        "2 slice regressions (form=match top1 -30.0 pts, form=match top3 -30.0 pts)"
    ]


def test_a_verdict_stored_before_the_slice_rule_still_reads() -> None:
    """A stored verdict without the new keys (slice figures, warnings, too-small slices)."""
    old = {
        "state": "regression",
        "baseline_run_id": 4,
        "top1_delta": -0.2,
        "is_regression": True,
        "slice_regressions": [
            {"dimension": "form", "value": "gap", "metric": "top1", "baseline": 0.6,
             "current": 0.3, "delta": -0.3}
        ],
        "flipped_to_miss": ["q1", "q2"],
        "reasons": ["1 slice regression (form=gap top1 -30.0 pts)"],
        "summary": "Regression against run 4.",
    }  # fmt: skip
    verdict = Verdict.model_validate(old)
    assert verdict.slice_regressions[0].severity == "error"
    assert verdict.slices_too_small == [] and warning_reasons(verdict) == []
    text = render_verdict(verdict)
    assert "  Slice regression: form=gap top1 60.0% → 30.0% (-30.0 pts)\n" in text


def test_the_json_contract_carries_the_slice_figures() -> None:
    before, after = _runs(6, 3, 6, 34, 14, 4)
    contract = verdict_document(_verdict(before, after))
    (first, _) = contract["slices_too_small"]  # type: ignore[misc]
    assert set(first) == {
        "dimension", "value", "metric", "baseline", "current", "delta", "questions",
        "max_drop", "p_value", "p_holm", "detectable_drop", "severity",
    }  # fmt: skip
    assert (first["value"], first["questions"], first["p_holm"]) == ("tiny", 6, 1.0)
    assert contract["slice_regressions"] == [] and contract["slice_warnings"] == []
    assert contract["warnings"] == []

"""Verdict rules without a database: thresholds, slices, flips, McNemar, states, rendering."""

from __future__ import annotations

import pytest
from pydantic import ValidationError
from store.builders import as_stored, hits, make_run, question

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.intervals import paired_difference
from retrieval_eval.reports.verdict import render_verdict, verdict_document, verdict_summary
from retrieval_eval.verdicts.regression import detect_regression, mcnemar_exact

DEFAULT = Thresholds()


# -- McNemar ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("b", "c", "expected"),
    [
        (0, 0, 1.0),  # no discordant pairs: no evidence of change
        (3, 3, 1.0),  # balanced flips: capped at 1
        (1, 0, 1.0),  # 2 * C(1,0)/2 = 1
        (5, 1, 0.21875),  # 2 * (C(6,0) + C(6,1)) / 2^6 = 2 * 7/64
        (1, 5, 0.21875),  # symmetric
        (6, 0, 0.03125),  # 2 * 1/64
        (10, 0, 0.001953125),  # 2 * 1/1024
        (8, 2, 0.109375),  # 2 * (1 + 10 + 45) / 1024 = 112/1024
    ],
)
def test_mcnemar_exact_matches_hand_computation(b: int, c: int, expected: float) -> None:
    assert mcnemar_exact(b, c) == pytest.approx(expected, abs=1e-15)


def test_mcnemar_exact_survives_large_counts() -> None:
    p = mcnemar_exact(1100, 900)
    assert 0 < p < 1e-4  # 2,000 discordant pairs: no float underflow on the way
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)


@pytest.mark.parametrize("n", [1, 2, 7, 40, 301])
def test_mcnemar_exact_is_the_binomial_tail_summed_afresh(n: int) -> None:
    from fractions import Fraction
    from math import comb

    for b in range(n + 1):
        tail = Fraction(sum(comb(n, i) for i in range(min(b, n - b) + 1)), 2**n)
        assert mcnemar_exact(b, n - b) == float(min(Fraction(1), 2 * tail))


@pytest.mark.parametrize(("b", "c"), [(4700, 5300), (5000, 5000), (9000, 1000), (3, 12000)])
def test_mcnemar_exact_matches_statsmodels_on_large_counts(b: int, c: int) -> None:
    from statsmodels.stats.contingency_tables import mcnemar

    expected = mcnemar([[0, b], [c, 0]], exact=True).pvalue
    assert mcnemar_exact(b, c) == pytest.approx(expected, rel=1e-9, abs=1e-300)


# -- thresholds ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("current_hits", "state"),
    [
        (8, "no_regression"),  # no change
        (7, "no_regression"),  # -10 pts: AT the limit (0.8 - 0.7 = 0.10000000000000009 in floats)
        (6, "regression"),  # -20 pts: above the limit
        (9, "no_regression"),  # improvement
    ],
)
def test_top1_threshold_at_below_and_above(current_hits: int, state: str) -> None:
    baseline = as_stored(make_run(hits(8, 10)))
    verdict = detect_regression(make_run(hits(current_hits, 10), day=1), baseline, DEFAULT)
    assert verdict.state == state
    assert verdict.is_regression is (state == "regression")
    assert verdict.top1_delta == pytest.approx((current_hits - 8) / 10)


def test_a_drop_just_below_the_threshold_passes_and_just_above_fails() -> None:
    baseline = as_stored(make_run(hits(80, 100)))
    current = make_run(hits(75, 100), day=1)  # -5 pts
    assert detect_regression(current, baseline, Thresholds(max_top1_drop=0.05)).state == (
        "no_regression"
    )
    assert detect_regression(current, baseline, Thresholds(max_top1_drop=0.049)).state == (
        "regression"
    )


def test_top3_has_its_own_threshold() -> None:
    base = [question(f"q{i}", False, True) for i in range(10)]  # top-1 0%, top-3 100%
    now = [question(f"q{i}", False, i < 7) for i in range(10)]  # top-3 70%
    verdict = detect_regression(make_run(now, day=1), as_stored(make_run(base)), DEFAULT)
    assert verdict.state == "regression"
    assert verdict.top1_delta == 0
    assert verdict.top3_delta == pytest.approx(-0.3)
    assert verdict.top3_flipped_to_miss == ["q7", "q8", "q9"]
    assert verdict.flipped_to_miss == []
    loose = detect_regression(
        make_run(now, day=1), as_stored(make_run(base)), Thresholds(max_top3_drop=0.3)
    )
    assert loose.state == "no_regression"


def test_a_zero_threshold_flags_any_drop() -> None:
    strict = Thresholds(max_top1_drop=0, max_top3_drop=0)
    baseline = as_stored(make_run(hits(8, 10)))
    assert detect_regression(make_run(hits(8, 10), day=1), baseline, strict).state == (
        "no_regression"
    )
    assert detect_regression(make_run(hits(7, 10), day=1), baseline, strict).state == "regression"


@pytest.mark.parametrize("field", ["max_top1_drop", "max_top3_drop"])
def test_negative_thresholds_are_rejected(field: str) -> None:
    with pytest.raises(ValidationError):
        Thresholds.model_validate({field: -0.1})


# -- slices ----------------------------------------------------------------------------------


def _class_swap(n: int = 20) -> tuple[list, list]:  # type: ignore[type-arg]
    """Class A collapses while class B recovers (``n`` questions each): the overall rate does
    not move."""
    before = [question(f"a{i}", True, hard_class="A") for i in range(n)] + [
        question(f"b{i}", False, hard_class="B") for i in range(n)
    ]
    after = [question(f"a{i}", False, hard_class="A") for i in range(n)] + [
        question(f"b{i}", True, hard_class="B") for i in range(n)
    ]
    return before, after


def test_a_slice_regression_that_cancels_out_overall_is_caught() -> None:
    before, after = _class_swap()
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    assert verdict.top1_delta == 0 and verdict.top3_delta == 0
    assert verdict.state == "regression"
    assert [(s.dimension, s.value, s.metric) for s in verdict.slice_regressions] == [
        ("hard_class", "A", "top1"),
        ("hard_class", "A", "top3"),
    ]
    first = verdict.slice_regressions[0]
    assert (first.baseline, first.current, first.delta) == (1.0, 0.0, -1.0)
    # 20 of 20 flipped: significant after Holm across the 6 slice tests (form=match, A, B at
    # top-1 and top-3), though 20 questions cannot see a 10-point drop
    assert first.p_value == mcnemar_exact(20, 0)
    assert first.p_holm == pytest.approx(6 * mcnemar_exact(20, 0))
    assert first.detectable_drop is not None and first.detectable_drop > 0.10
    assert "hard_class=A" in verdict_summary(verdict)


def test_slices_smaller_than_min_slice_questions_are_not_judged() -> None:
    before, after = _class_swap()
    verdict = detect_regression(
        make_run(after, day=1), as_stored(make_run(before)), Thresholds(min_slice_questions=21)
    )
    assert verdict.state == "no_regression"
    assert verdict.slice_regressions == [] and verdict.slices_too_small == []


def test_a_slice_too_small_in_either_run_is_not_judged() -> None:
    """The smaller of the two runs' slice sizes decides: 5 questions of class A in the baseline,
    3 now (two relabelled), with min_slice_questions=5, is not judged however it moved."""
    before, after = _class_swap(5)
    after = [
        question(q.id, False, hard_class="A" if q.id in ("a0", "a1", "a2") else "B")
        if q.id.startswith("a")
        else q
        for q in after
    ]
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    judged = [*verdict.slice_regressions, *verdict.slices_too_small]
    assert ("hard_class", "A") not in {(s.dimension, s.value) for s in judged}


def test_form_slices_are_judged_too() -> None:
    before = hits(20, 20, prefix="m", form="match") + hits(0, 20, prefix="g", form="gap")
    after = hits(0, 20, prefix="m", form="match") + hits(20, 20, prefix="g", form="gap")
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    assert {(s.dimension, s.value) for s in verdict.slice_regressions} == {("form", "match")}


# -- flips -----------------------------------------------------------------------------------


def test_flips_list_question_ids_and_the_p_value_follows_them() -> None:
    before = hits(8, 10)  # q000..q007 hit, q008, q009 miss
    after = [
        question(q.id, hit)
        for q, hit in zip(
            before, [False, False, False, False, False, True, True, True, True, False], strict=True
        )
    ]
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    assert verdict.flipped_to_miss == ["q000", "q001", "q002", "q003", "q004"]
    assert verdict.flipped_to_hit == ["q008"]
    assert verdict.top3_flipped_to_miss == verdict.flipped_to_miss
    assert verdict.top3_flipped_to_hit == ["q008"]
    assert verdict.p_value == pytest.approx(0.21875)  # b=5, c=1: 2 * 7/64
    assert "McNemar exact p = 0.219" in verdict_summary(verdict)


def test_the_paired_interval_of_the_change_sits_next_to_the_p_value() -> None:
    before = hits(8, 10)
    after = [
        question(q.id, hit)
        for q, hit in zip(
            before, [False, False, False, False, False, True, True, True, True, False], strict=True
        )
    ]
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    # current vs baseline: 3 hit in both, 1 only now (q008), 5 only before, 1 in neither
    assert verdict.top1_delta_ci == paired_difference(3, 1, 5, 1)
    assert verdict.top3_delta_ci == verdict.top1_delta_ci
    low, high = verdict.top1_delta_ci  # type: ignore[misc]
    assert verdict.top1_delta == pytest.approx(-0.4)
    assert low < -0.4 < high
    assert "(change 95% CI [" in verdict_summary(
        verdict
    ) and "McNemar exact p = 0.219)" in verdict_summary(verdict)
    text = render_verdict(verdict)
    pts = f"[{low * 100:+.1f}, {high * 100:+.1f}] pts"
    assert f"McNemar exact p = 0.219; change 95% CI {pts}" in text
    assert verdict_document(verdict)["top1_delta_ci"] == [low, high]


def test_the_interval_is_over_the_questions_both_runs_have() -> None:
    before = [*hits(2, 4), question("gone", True)]
    after = [*hits(3, 4), question("new", False)]
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    assert verdict.top1_delta_ci == paired_difference(2, 1, 0, 1)
    unpaired = detect_regression(
        make_run(hits(0, 2, prefix="new"), day=1), as_stored(make_run(hits(2, 2))), DEFAULT
    )
    assert unpaired.top1_delta_ci is None and "change 95% CI –" in render_verdict(unpaired)
    first = detect_regression(make_run(hits(1, 2)), None, DEFAULT)
    assert first.top1_delta_ci is None and first.top3_delta_ci is None


def test_questions_in_only_one_run_do_not_flip() -> None:
    before = hits(2, 2, prefix="old")
    after = hits(0, 2, prefix="new")
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), DEFAULT)
    assert verdict.flipped_to_miss == [] and verdict.flipped_to_hit == []
    assert verdict.p_value == 1.0


# -- states ----------------------------------------------------------------------------------


def test_no_baseline_means_baseline() -> None:
    verdict = detect_regression(make_run(hits(1, 2)), None, DEFAULT)
    assert (verdict.state, verdict.is_regression, verdict.baseline_run_id) == (
        "baseline",
        False,
        None,
    )


def test_an_invalid_run_is_never_compared() -> None:
    current = make_run(hits(0, 4, error="503 Service Unavailable"), day=1)
    verdict = detect_regression(current, as_stored(make_run(hits(4, 4))), DEFAULT)
    assert verdict.state == "invalid_run"
    assert verdict.is_regression is False
    assert verdict.top1_delta is None
    assert "4 of 4 questions errored" in verdict_summary(verdict)
    # never compared, so it names no baseline run: not in the verdict, the store or the headline
    assert verdict.baseline_run_id is None
    assert "baseline run" not in render_verdict(verdict)
    # a verdict stored before invalid runs stopped carrying an id still names none
    old = verdict.model_copy(update={"baseline_run_id": 7})
    assert render_verdict(old).splitlines()[0] == "Verdict: INVALID RUN"


def test_another_labels_fingerprint_is_not_comparable() -> None:
    baseline = as_stored(make_run(hits(10, 10), fingerprint="before-edit"), run_id=3)
    verdict = detect_regression(make_run(hits(1, 10), day=1), baseline, DEFAULT)
    assert verdict.state == "not_comparable"
    assert verdict.is_regression is False
    assert verdict.baseline_run_id == 3
    assert "labels changed since baseline run 3" in verdict_summary(verdict)


def test_another_set_is_not_comparable() -> None:
    baseline = as_stored(make_run(hits(10, 10), set_identifier="other.set"))
    assert detect_regression(make_run(hits(1, 10)), baseline, DEFAULT).state == "not_comparable"


def test_comparable_false_forces_not_comparable_with_its_cause() -> None:
    verdict = detect_regression(
        make_run(hits(1, 2)),
        None,
        DEFAULT,
        comparable=False,
        cause="store_unreachable",
        store_problem="the run went to the spool",
    )
    assert verdict.state == "not_comparable" and verdict.cause == "store_unreachable"
    assert verdict.summary == "" and verdict.reasons == []  # data: worded when read
    assert verdict_summary(verdict).startswith(
        "Result store unreachable: the run went to the spool. Not comparable"
    )


def test_latency_regression_is_opt_in() -> None:
    baseline = as_stored(make_run(hits(5, 5, latency_ms=10.0)))
    slow = make_run(hits(5, 5, latency_ms=16.0), day=1)
    unjudged = detect_regression(slow, baseline, DEFAULT)
    assert (unjudged.state, unjudged.latency_regression) == ("no_regression", False)
    verdict = detect_regression(slow, baseline, Thresholds(max_latency_p95_increase=0.5))
    assert verdict.latency_regression is True
    assert verdict.latency_p95_ratio == pytest.approx(0.6)
    assert verdict.state == "regression"
    fine = detect_regression(slow, baseline, Thresholds(max_latency_p95_increase=0.6))
    assert (fine.latency_regression, fine.state) == (False, "no_regression")


# -- rendering -------------------------------------------------------------------------------


def test_render_verdict_names_baseline_deltas_slices_and_flips() -> None:
    before, after = _class_swap()
    verdict = detect_regression(
        make_run(after, day=1), as_stored(make_run(before), run_id=12), DEFAULT
    )
    text = render_verdict(verdict)
    assert text.startswith("Verdict: REGRESSION (baseline run 12)\n")
    assert "Top-1: 50.0% → 50.0% (+0.0 pts)" in text
    assert "Slice regression: hard_class=A top1 100.0% → 0.0% (-100.0 pts); 20 questions" in text
    assert (
        "Top-1 flips: 20 hit→miss (a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, +8 more)"
        in text
    )
    assert "McNemar exact p = 1" in text
    markdown = render_verdict(verdict, markdown=True)
    assert markdown.startswith("## Verdict\n\n```\nVerdict: REGRESSION")


def test_render_verdict_of_a_first_run_is_its_summary() -> None:
    text = render_verdict(detect_regression(make_run(hits(1, 2)), None, DEFAULT))
    assert text == (
        "Verdict: BASELINE\n"
        "  First run for demo.set × bm25 with these labels: it becomes the baseline.\n"
    )


def test_contract_holds_the_json_keys() -> None:
    verdict = detect_regression(
        make_run(hits(7, 10), day=1), as_stored(make_run(hits(8, 10))), DEFAULT
    )
    assert {
        "state",
        "baseline_run_id",
        "top1_delta",
        "top3_delta",
        "is_regression",
        "slice_regressions",
        "flipped_to_miss",
        "flipped_to_hit",
        "top3_flipped_to_miss",
        "top3_flipped_to_hit",
        "p_value",
        "summary",
    } <= set(verdict_document(verdict))

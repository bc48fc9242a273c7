"""The verdict at every gated depth: its own threshold, slices, flips, McNemar with Holm across
the depths; a baseline judged at other depths; the seed's fields unchanged."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from store.builders import as_stored, ranked_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.reports.verdict import regression_reasons, render_verdict, verdict_summary
from retrieval_eval.verdicts.regression import Verdict, detect_regression, holm, mcnemar_exact


def _run(ranks: dict[str, int | None], depths: Sequence[int], day: int = 0, **kw: Any) -> RunResult:
    return ranked_run(ranks, list(depths), day=day, **kw)


# 20 questions: 6 hit at rank 1, 4 at rank 2, 6 at rank 4 or 5, 4 never
BEFORE = {
    **{f"a{i}": 1 for i in range(6)},
    **{f"b{i}": 2 for i in range(4)},
    **{f"c{i}": 4 + i % 2 for i in range(6)},
    **{f"n{i}": None for i in range(4)},
}
# the same, but the six rank-4/5 hits fell to rank 8: top-1 and top-3 unchanged, top-5 -30 pts
AFTER = {**BEFORE, **{f"c{i}": 8 for i in range(6)}}


def _verdict(depths: Sequence[int], thresholds: Thresholds | None = None, **kw: object) -> Verdict:
    baseline = as_stored(_run(BEFORE, depths), run_id=1)
    return detect_regression(_run(AFTER, depths, day=1), baseline, thresholds or Thresholds(), **kw)  # type: ignore[arg-type]


def test_a_drop_at_depth_5_only_regresses_when_5_is_gated() -> None:
    seed = _verdict([1, 3])
    assert (seed.state, regression_reasons(seed), list(seed.by_depth)) == (
        "no_regression",
        [],
        [1, 3],
    )
    deep = _verdict([1, 5])
    assert deep.state == "regression" and list(deep.by_depth) == [1, 5]
    five = deep.by_depth[5]
    assert (five.baseline, five.current) == (pytest.approx(16 / 20), pytest.approx(10 / 20))
    assert five.delta == pytest.approx(-0.30) and five.dropped and five.max_drop == 0.10
    assert not deep.by_depth[1].dropped and deep.by_depth[1].delta == 0
    # every question is a "match": the form slice drops as much, but 6 flips of 20 are not
    # significant after Holm across its two depths, and 20 questions cannot see 10 points
    assert regression_reasons(deep) == ["top-5 -30.0 pts (max drop 10.0 pts)"]
    assert [(s.scope, s.metric) for s in deep.slices_too_small] == [("form=match", "top5")]
    assert five.flipped_to_miss == [f"c{i}" for i in range(6)] and five.flipped_to_hit == []
    assert five.p_value == mcnemar_exact(6, 0)
    assert [deep.by_depth[d].p_holm for d in (1, 5)] == holm([1.0, mcnemar_exact(6, 0)])
    # the seed's fields stay top-1 and top-3, gated or not
    assert (deep.top1_delta, deep.top3_delta, deep.p_value) == (0, 0, 1.0)


def test_each_depth_has_its_own_threshold() -> None:
    loose = _verdict([1, 5], Thresholds.model_validate({"max_top5_drop": 0.30}))
    assert loose.state == "no_regression"  # exactly at the threshold does not regress
    strict = _verdict([1, 3, 5, 10], Thresholds.model_validate({"max_top5_drop": 0.05}))
    assert strict.state == "regression" and strict.by_depth[5].max_drop == 0.05
    assert not strict.by_depth[10].dropped  # rank 8 is still within the top 10
    assert strict.by_depth[10].flipped_to_miss == []


def test_slices_are_judged_at_a_deep_depth_too() -> None:
    """The six gap questions all fall out of the top 5: p = 1/32, Holm-adjusted across the
    four slice tests (match and gap at top-1 and top-5) 1/8, and six questions cannot see ten
    points, so the slice is too small to judge; at alpha 0.2 it is significant and regresses."""
    forms = {qid: ("gap" if qid.startswith("c") else "match") for qid in BEFORE}
    baseline = as_stored(_run(BEFORE, [1, 5], forms=forms), run_id=1)
    after = _run(AFTER, [1, 5], day=1, forms=forms)
    verdict = detect_regression(after, baseline, Thresholds())
    (gap,) = [s for s in verdict.slices_too_small if s.value == "gap"]
    assert (gap.metric, gap.baseline, gap.current) == ("top5", 1.0, 0.0)
    assert gap.p_holm == pytest.approx(4 * mcnemar_exact(6, 0))
    lenient = Thresholds.model_validate({"power": {"alpha": 0.2}})
    (regressed,) = detect_regression(after, baseline, lenient).slice_regressions
    assert (regressed.scope, regressed.metric) == ("form=gap", "top5")


def test_a_baseline_gated_at_other_depths_is_recounted_at_these() -> None:
    """Switching from [1, 3] to [1, 5] keeps the baseline: its first hit ranks cover the 12
    ids it fetched, so its top-5 hits are known; a depth deeper than it fetched is not compared."""
    baseline = as_stored(_run(BEFORE, [1, 3]), run_id=1)
    verdict = detect_regression(_run(AFTER, [1, 5, 20], day=1), baseline, Thresholds())
    assert verdict.state == "regression" and verdict.by_depth[5].baseline == pytest.approx(0.8)
    twenty = verdict.by_depth[20]
    assert (twenty.compared, twenty.baseline, twenty.p_value) == (False, None, None)
    text = render_verdict(verdict)
    assert "  Top-20: 80.0% (not compared: the baseline did not fetch this deep)" in text
    assert "Top-20 flips" not in text


def test_the_text_names_every_gated_depth_with_holm() -> None:
    text = render_verdict(_verdict([1, 3, 5, 10]))
    lines = text.splitlines()
    assert "  Top-5: 80.0% → 50.0% (-30.0 pts)" in lines
    assert "  Top-10: 80.0% → 80.0% (+0.0 pts)" in lines
    five = next(line for line in lines if line.startswith("  Top-5 flips:"))
    assert five.startswith("  Top-5 flips: 6 hit→miss (c0, c1, c2, c3, c4, c5), 0 miss→hit;")
    assert "McNemar exact p = 0.0312; change 95% CI [" in five
    assert five.endswith("Holm-adjusted p = 0.125")  # 4 depths: 4 × 0.03125
    summary = verdict_summary(_verdict([1, 3, 5, 10]))
    assert summary.startswith("Regression against run 1: top-5 -30.0 pts (max drop 10.0 pts); ")
    assert "top-1 flips: 0 hit→miss, 0 miss→hit" in summary
    assert "top-5 flips: 6 hit→miss, 0 miss→hit" in summary and "Holm-adjusted 0.125" in summary


def test_a_verdict_stored_before_depths_reads_its_seed_fields() -> None:
    verdict = _verdict([1, 3])
    legacy = Verdict.model_validate(
        {k: v for k, v in verdict.model_dump(mode="json").items() if k != "by_depth"}
    )
    assert legacy.by_depth == {}
    changes = legacy.changes()
    assert list(changes) == [1, 3]
    assert changes[1].delta == verdict.by_depth[1].delta
    assert changes[3].p_holm == verdict.by_depth[3].p_holm
    assert render_verdict(legacy) == render_verdict(verdict)

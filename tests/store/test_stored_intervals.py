"""The 95 % intervals live in a stored run's ``details`` JSON and come back with the run."""

from __future__ import annotations

from sqlalchemy import select

from retrieval_eval.config.models import Thresholds
from retrieval_eval.store import Store
from retrieval_eval.store.schema import eval_result
from retrieval_eval.verdicts.regression import detect_regression
from store.builders import hits, make_run, question


def test_details_hold_the_intervals_and_a_run_read_back_carries_them(store: Store) -> None:
    baseline = make_run([*hits(6, 10), question("x", True, hard_class="h")])
    baseline_id = store.runs.save(baseline, detect_regression(baseline, None, Thresholds()))
    current = make_run([*hits(8, 10), question("x", False, hard_class="h")], day=1)
    verdict = detect_regression(current, store.get_run(baseline_id), Thresholds())
    assert verdict.top1_delta_ci is not None
    run_id = store.runs.save(current, verdict)

    with store.engine.connect() as conn:
        details = conn.execute(
            select(eval_result.c.details).where(eval_result.c.id == run_id)
        ).scalar_one()
    contract = current.contract()
    for key in ("top1_hit_rate_ci", "top3_hit_rate_ci", "metrics_ci"):
        assert details[key] == contract[key]
    assert details["top1_hit_rate_ci"] is not None and len(details["top1_hit_rate_ci"]) == 2
    assert set(details["metrics_ci"]) == {"hit_rate@1", "hit_rate@3"}
    for dimension in ("by_form", "by_hard_class"):
        for value, s in contract[dimension].items():
            assert details[dimension][value]["top1_hit_rate_ci"] == s["top1_hit_rate_ci"]
            assert details[dimension][value]["top3_hit_rate_ci"] == s["top3_hit_rate_ci"]
    assert details["by_form"]["gap"]["top1_hit_rate_ci"] is None  # no gap question: no interval
    assert details["verdict"]["top1_delta_ci"] == list(verdict.top1_delta_ci)

    stored = store.get_run(run_id)
    assert stored.result.intervals() == current.intervals()
    assert stored.result.by_hard_class["h"].intervals() == current.by_hard_class["h"].intervals()
    assert stored.verdict is not None
    assert stored.verdict.top1_delta_ci == verdict.top1_delta_ci
    assert stored.verdict.top3_delta_ci == verdict.top3_delta_ci

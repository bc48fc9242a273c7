"""Baseline selection, each rule of the issue, through record_run on both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import UnknownNameError
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import Store
from retrieval_eval.workflows.recording import Recorded, record_run
from store.builders import hits, make_run, question

THRESHOLDS = Thresholds()


def _record(store_url: str, result, **kwargs) -> Recorded:  # type: ignore[no-untyped-def]
    return record_run(result, store_url=store_url, thresholds=THRESHOLDS, **kwargs)


def test_the_first_run_is_the_baseline_and_the_next_compares_with_it(store_url: str) -> None:
    first = _record(store_url, make_run(hits(8, 10), day=0))
    assert first.verdict.state == "baseline"
    assert first.saved and first.run_id is not None and first.spool_path is None
    second = _record(store_url, make_run(hits(8, 10), day=1))
    assert second.verdict.state == "no_regression"
    assert second.verdict.baseline_run_id == first.run_id


def test_the_newest_valid_run_is_the_baseline(store_url: str) -> None:
    _record(store_url, make_run(hits(8, 10), day=0))
    newer = _record(store_url, make_run(hits(9, 10), day=1))
    assert _record(store_url, make_run(hits(9, 10), day=2)).verdict.baseline_run_id == newer.run_id


def test_an_invalid_run_never_becomes_the_baseline(store_url: str) -> None:
    good = _record(store_url, make_run(hits(8, 10), day=0))
    outage = _record(store_url, make_run(hits(0, 10, error="connection refused"), day=1))
    assert outage.verdict.state == "invalid_run"
    assert outage.saved
    after = _record(store_url, make_run(hits(8, 10), day=2))
    assert after.verdict.baseline_run_id == good.run_id


def test_a_regressed_run_does_not_become_the_new_normal(store_url: str, store: Store) -> None:
    good = _record(store_url, make_run(hits(8, 10), day=0))
    bad = _record(store_url, make_run(hits(5, 10), day=1))
    assert bad.verdict.state == "regression"
    assert store.get_run(bad.run_id).is_regression  # type: ignore[arg-type]
    still_bad = _record(store_url, make_run(hits(5, 10), day=2))
    assert still_bad.verdict.baseline_run_id == good.run_id
    assert still_bad.verdict.state == "regression"


def test_an_accepted_regression_becomes_the_baseline(store_url: str, store: Store) -> None:
    _record(store_url, make_run(hits(8, 10), day=0))
    bad = _record(store_url, make_run(hits(5, 10), day=1))
    assert bad.run_id is not None
    store.runs.accept_baseline(bad.run_id)
    after = _record(store_url, make_run(hits(5, 10), day=2))
    assert after.verdict.baseline_run_id == bad.run_id
    assert after.verdict.state == "no_regression"


def test_a_label_edit_gives_not_comparable_then_a_new_baseline(store_url: str) -> None:
    _record(store_url, make_run(hits(8, 10), day=0, fingerprint="fp-1"))
    edited = _record(store_url, make_run(hits(2, 10), day=1, fingerprint="fp-2"))
    assert edited.verdict.state == "not_comparable"
    assert not edited.verdict.is_regression
    assert "labels changed" in verdict_summary(edited.verdict)
    after = _record(store_url, make_run(hits(2, 10), day=2, fingerprint="fp-2"))
    assert after.verdict.state == "no_regression"
    assert after.verdict.baseline_run_id == edited.run_id


def test_other_retrievers_and_sets_have_their_own_baselines(store_url: str) -> None:
    _record(store_url, make_run(hits(8, 10), day=0))
    assert _record(store_url, make_run(hits(1, 10), retriever="dense", day=1)).verdict.state == (
        "baseline"
    )
    assert _record(
        store_url, make_run(hits(1, 10), set_identifier="other.set", day=1)
    ).verdict.state == ("baseline")


def test_a_pinned_baseline_wins(store_url: str) -> None:
    pinned = _record(store_url, make_run(hits(10, 10), day=0))
    newer = _record(store_url, make_run(hits(9, 10), day=1))  # -10 pts: within the limit
    automatic = _record(store_url, make_run(hits(8, 10), day=2)).verdict
    assert (automatic.state, automatic.baseline_run_id) == ("no_regression", newer.run_id)
    pinned_verdict = _record(
        store_url, make_run(hits(8, 10), day=3), baseline_run_id=pinned.run_id
    ).verdict
    assert pinned_verdict.baseline_run_id == pinned.run_id
    assert pinned_verdict.state == "regression"
    assert pinned_verdict.top1_delta == pytest.approx(-0.2)


def test_a_pinned_baseline_may_be_another_retriever(store_url: str) -> None:
    other = _record(store_url, make_run(hits(9, 10), retriever="dense", day=0))
    verdict = _record(store_url, make_run(hits(9, 10), day=1), baseline_run_id=other.run_id).verdict
    assert (verdict.state, verdict.baseline_run_id) == ("no_regression", other.run_id)


def test_a_pinned_baseline_with_other_labels_is_not_comparable(store_url: str) -> None:
    old = _record(store_url, make_run(hits(9, 10), fingerprint="fp-0", day=0))
    verdict = _record(store_url, make_run(hits(1, 10), day=1), baseline_run_id=old.run_id).verdict
    assert verdict.state == "not_comparable"
    assert verdict.baseline_run_id == old.run_id


def test_a_pinned_invalid_run_is_not_comparable(store_url: str) -> None:
    outage = _record(store_url, make_run(hits(0, 10, error="connection refused"), day=0))
    verdict = _record(
        store_url, make_run(hits(8, 10), day=1), baseline_run_id=outage.run_id
    ).verdict
    assert (verdict.state, verdict.baseline_run_id) == ("not_comparable", outage.run_id)
    assert f"Baseline run {outage.run_id} is invalid" in verdict_summary(verdict)
    assert verdict.top1_delta is None and not verdict.is_regression


def test_an_unknown_pinned_baseline_is_an_input_error(store_url: str) -> None:
    with pytest.raises(UnknownNameError, match="no stored run with id 4242"):
        _record(store_url, make_run(hits(1, 2)), baseline_run_id=4242)


def test_a_replayed_older_run_is_not_compared_with_a_later_one(store_url: str) -> None:
    first = _record(store_url, make_run(hits(8, 10), day=0))
    _record(store_url, make_run(hits(9, 10), day=5))
    late_arrival = _record(store_url, make_run(hits(8, 10), day=2))
    assert late_arrival.verdict.baseline_run_id == first.run_id


def test_an_overlapping_run_saved_first_is_the_baseline(store_url: str) -> None:
    """Two runs overlap; the one that started later finished and was saved first: the other
    one, saved after it, is judged against it rather than skipping it."""
    _record(store_url, make_run(hits(8, 10), day=0))
    slow = make_run(hits(8, 10), day=1)
    slow = slow.model_copy(update={"finished_at": slow.started_at + timedelta(hours=1)})
    quick = make_run(hits(8, 10), day=1)
    start = slow.started_at + timedelta(minutes=5)
    quick = quick.model_copy(
        update={"started_at": start, "finished_at": start + timedelta(minutes=1)}
    )
    saved_first = _record(store_url, quick)
    assert _record(store_url, slow).verdict.baseline_run_id == saved_first.run_id


def test_recording_the_same_run_again_returns_the_stored_id_and_verdict(store_url: str) -> None:
    _record(store_url, make_run(hits(8, 10), day=0))
    result = make_run([question("q000", False), *hits(8, 10)[1:]], day=1)
    once = _record(store_url, result)
    again = _record(store_url, result)
    assert again.run_id == once.run_id
    assert again.verdict == once.verdict
    assert again.verdict.flipped_to_miss == ["q000"]


def test_no_save_judges_without_storing(store_url: str, store: Store) -> None:
    _record(store_url, make_run(hits(8, 10), day=0))
    dry = _record(store_url, make_run(hits(2, 10), day=1), save=False)
    assert (dry.run_id, dry.saved, dry.verdict.state) == (None, False, "regression")
    assert len(store.history("demo.set", "bm25")) == 1


def test_labels_changed_back_compare_with_the_last_run_under_those_labels(
    store_url: str, store: Store
) -> None:
    """Labels A, then B, then A again: the third run's baseline is the first, never B's run."""
    first = _record(store_url, make_run(hits(8, 10), day=0, fingerprint="fp-A"))
    other = _record(store_url, make_run(hits(3, 10), day=1, fingerprint="fp-B"))
    # nothing stored under B's labels: B starts its own baseline, compared with nothing
    assert other.verdict.state == "not_comparable"
    assert other.verdict.baseline_run_id is None
    assert "starts a new baseline" in verdict_summary(other.verdict)
    third = _record(store_url, make_run(hits(8, 10), day=2, fingerprint="fp-A"))
    assert third.verdict.state == "no_regression"
    assert third.verdict.baseline_run_id == first.run_id
    assert store.find_baseline("demo.set", "bm25", "fp-B").id == other.run_id  # type: ignore[union-attr]
    assert store.find_baseline("demo.set", "bm25", "fp-A").id == third.run_id  # type: ignore[union-attr]
    fourth = _record(store_url, make_run(hits(3, 10), day=3, fingerprint="fp-B"))
    assert (fourth.verdict.state, fourth.verdict.baseline_run_id) == ("no_regression", other.run_id)

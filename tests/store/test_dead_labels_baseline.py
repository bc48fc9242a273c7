"""``dead_labels_baseline``: a run whose index lost labelled documents is stored and judged, but
is refused as a baseline (``refuse``, the default) until accepted; ``allow`` lets it be one.
On both backends, since the refusal is read from the stored verdict by the baseline query."""

from __future__ import annotations

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import Store
from retrieval_eval.workflows.recording import Recorded, record_run
from store.builders import hits, make_run

DEAD = DeadLabels(checked=True, source="corpus", dead_ids=["gone.md"], stale_questions=["q0"])
PARTLY = DeadLabels(
    checked=True, source="corpus", dead_ids=["gone.md"], partly_dead={"q0": ["gone.md"]}
)


def _dead(result: RunResult, labels: DeadLabels = DEAD) -> RunResult:
    return result.model_copy(update={"dead_labels": labels})


def _record(store_url: str, result: RunResult, **kwargs: str) -> Recorded:
    return record_run(result, store_url=store_url, thresholds=Thresholds(), **kwargs)


def test_a_first_run_with_dead_labels_is_stored_but_not_the_baseline(
    store_url: str, store: Store
) -> None:
    first = _record(store_url, _dead(make_run(hits(8, 10), day=0)))
    assert first.saved and first.verdict.state == "baseline"
    assert first.verdict.baseline_refused
    assert "Not accepted as the baseline" in verdict_summary(first.verdict)
    run = store.get_run(first.run_id)  # type: ignore[arg-type]
    assert run.verdict is not None and run.verdict.baseline_refused
    assert store.find_baseline(run.result.set_identifier, run.result.retriever, "fp-1") is None
    # the next (healthy) run finds nothing to compare with: it is the baseline
    second = _record(store_url, make_run(hits(8, 10), day=1))
    assert second.verdict.state == "baseline" and not second.verdict.baseline_refused
    third = _record(store_url, make_run(hits(8, 10), day=2))
    assert third.verdict.baseline_run_id == second.run_id


def test_the_previous_baseline_stays_when_a_later_run_has_dead_labels(store_url: str) -> None:
    good = _record(store_url, make_run(hits(8, 10), day=0))
    dead = _record(store_url, _dead(make_run(hits(8, 10), day=1)))
    assert dead.verdict.state == "no_regression" and dead.verdict.baseline_refused
    after = _record(store_url, make_run(hits(8, 10), day=2))
    assert after.verdict.baseline_run_id == good.run_id


def test_baseline_accept_makes_a_refused_run_the_baseline(store_url: str, store: Store) -> None:
    refused = _record(store_url, _dead(make_run(hits(8, 10), day=0)))
    assert refused.run_id is not None
    store.runs.accept_baseline(refused.run_id)
    after = _record(store_url, make_run(hits(8, 10), day=1))
    assert after.verdict.baseline_run_id == refused.run_id


def test_allow_lets_a_run_with_dead_labels_be_the_baseline(store_url: str) -> None:
    first = _record(store_url, _dead(make_run(hits(8, 10), day=0)), dead_labels_baseline="allow")
    assert first.verdict.state == "baseline" and not first.verdict.baseline_refused
    after = _record(store_url, make_run(hits(8, 10), day=1))
    assert after.verdict.baseline_run_id == first.run_id


def test_a_question_that_kept_a_target_does_not_refuse_the_run(store_url: str) -> None:
    first = _record(store_url, _dead(make_run(hits(8, 10), day=0), PARTLY))
    assert first.verdict.state == "baseline" and not first.verdict.baseline_refused


def test_the_headline_says_the_run_was_not_accepted_as_the_baseline(store_url: str) -> None:
    from retrieval_eval.reports.headline import headline_document, headline_line, headline_text

    result = _dead(make_run(hits(8, 10), day=0))
    first = _record(store_url, result)
    assert "Not accepted as the baseline" in headline_text(result, first.verdict, first.run_id)
    assert "not accepted as the baseline" in headline_line(result, first.verdict, first.run_id)
    later = _record(store_url, _dead(make_run(hits(8, 10), day=1)), dead_labels_baseline="allow")
    assert "not accepted" not in headline_text(result, later.verdict)
    assert headline_document(result, first.verdict)["baseline_refused"] is True

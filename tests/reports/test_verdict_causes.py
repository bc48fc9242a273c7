"""Each code a verdict carries is worded by reports.verdict, the same in the summary, the text
block and the JSON contract: why nothing was compared, an invalid run's counts, a first run not
saved, a run refused as a baseline for dead labels, a re-judged run's labels."""

from __future__ import annotations

import pytest

from retrieval_eval.reports.verdict import (
    AWAITING_APPROVAL,
    BASELINE_REFUSED,
    LABELS_CHANGED,
    render_verdict,
    verdict_document,
    verdict_summary,
)
from retrieval_eval.verdicts.models import LabelsAttention, Verdict

NOT_COMPARABLE = "Not comparable: no regression check for this run."


@pytest.mark.parametrize(
    ("fields", "opening"),
    [
        ({"cause": "other_set", "baseline_set": "faq.v2"}, "Baseline run 4 is for set 'faq.v2'. "),
        (
            {"cause": "labels_changed_since_baseline"},
            "The golden set's labels changed since baseline run 4. ",
        ),
        ({"cause": "baseline_invalid"}, "Baseline run 4 is invalid. "),
        ({"cause": "labels_changed"}, f"{LABELS_CHANGED} "),
        ({"cause": "awaiting_approval"}, f"{AWAITING_APPROVAL} "),
        (
            {"cause": "store_unreachable", "store_problem": "connection refused"},
            "Result store unreachable: connection refused. ",
        ),
        (
            {"cause": "store_too_new", "store_problem": "migrated by 9.0"},
            "Result store not used: migrated by 9.0. ",
        ),
    ],
)
def test_a_cause_opens_the_summary(fields: dict[str, object], opening: str) -> None:
    verdict = Verdict(state="not_comparable", baseline_run_id=4, **fields)  # type: ignore[arg-type]
    assert verdict_summary(verdict) == opening + NOT_COMPARABLE
    assert f"  {opening}{NOT_COMPARABLE}" in render_verdict(verdict).splitlines()
    assert verdict_document(verdict)["summary"] == opening + NOT_COMPARABLE


def test_an_invalid_run_says_how_many_questions_errored() -> None:
    verdict = Verdict(state="invalid_run", errored=3, questions=4)
    assert verdict_summary(verdict) == (
        "Run invalid: 3 of 4 questions errored; it is not compared and never becomes a baseline."
    )


def test_a_first_run_becomes_the_baseline_unless_not_saved() -> None:
    first = Verdict(state="baseline", set_identifier="faq", retriever="bm25")
    assert verdict_summary(first) == (
        "First run for faq × bm25 with these labels: it becomes the baseline."
    )
    unsaved = first.model_copy(update={"not_saved": True})
    assert verdict_summary(unsaved).endswith("it would be the baseline, but it is not saved.")


def test_dead_labels_a_refusal_and_a_rejudged_run_follow_in_order() -> None:
    verdict = Verdict(
        state="baseline",
        set_identifier="faq",
        retriever="bm25",
        labels_attention=LabelsAttention(dead=2, stale=1, partly_dead=0, source="corpus"),
        baseline_refused=True,
        refused_for_dead_labels=True,
        rejudged_from=7,
        labels_version=3,
        labels_fingerprint="0123456789abcdef",
    )
    assert verdict_summary(verdict) == (
        "Re-judged run 7 against labels version 3, fingerprint 0123456789ab. "
        "First run for faq × bm25 with these labels: it becomes the baseline. "
        "labels need attention: 2 ids no longer in the index (1 stale question, 0 partly dead; "
        f"corpus). {BASELINE_REFUSED}"
    )
    # refused while awaiting approval is not a refusal for dead labels: no such sentence
    waiting = verdict.model_copy(update={"refused_for_dead_labels": False, "needs_approval": True})
    assert BASELINE_REFUSED not in verdict_summary(waiting)

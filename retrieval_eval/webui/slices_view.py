"""The run page's slice rates as the verdict judged them: without the stale questions.

A stale question (every target gone from the index) is a miss no retriever could avoid, so the
verdict leaves it out of both runs before comparing (:mod:`retrieval_eval.judging.regression`).
The run's own slice rates still count it, and beside a green verdict they told another story:
a slice that lost two of its five questions to a rebuild read 40 points down. When the verdict
lists stale questions, the run page shows each slice's rates over the questions left, this
run's and its baseline's, computed by the verdict's own function, and says how many of each
slice were left out. A run whose verdict left nothing out has none (its own rates stand).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from retrieval_eval.store.summary import SliceSummary, slice_summaries

if TYPE_CHECKING:
    from retrieval_eval.store import StoredRun


class JudgedSlices(BaseModel):
    """Slice rates over the questions the verdict judged (``left_out`` removed from both runs)."""

    left_out: list[str]  # the stale question ids, in the set's order
    questions: int  # this run's questions judged
    by_form: dict[str, SliceSummary] = Field(default_factory=dict)
    by_hard_class: dict[str, SliceSummary] = Field(default_factory=dict)
    # stale questions left out, per slice value (a value whose questions are all stale: absent above)
    stale_by_form: dict[str, int] = Field(default_factory=dict)
    stale_by_hard_class: dict[str, int] = Field(default_factory=dict)
    # the baseline's rates over the same questions (empty without a stored baseline)
    baseline_by_form: dict[str, SliceSummary] = Field(default_factory=dict)
    baseline_by_hard_class: dict[str, SliceSummary] = Field(default_factory=dict)


def judged_slices(stored: StoredRun, baseline: StoredRun | None) -> JudgedSlices | None:
    """The slices as judged, or None when the verdict left no question out."""
    from retrieval_eval.judging.regression import without_questions

    verdict = stored.verdict
    if verdict is None or not verdict.stale_questions:
        return None
    left_out = list(verdict.stale_questions)
    gone = set(left_out)
    current = without_questions(stored.result, gone)
    stale = [q for q in stored.result.questions if q.id in gone]
    old = without_questions(baseline.result, gone) if baseline is not None else None
    return JudgedSlices(
        left_out=left_out,
        questions=current.question_count,
        by_form=slice_summaries(current.by_form),
        by_hard_class=slice_summaries(current.by_hard_class),
        stale_by_form=_count(q.form.value for q in stale),
        stale_by_hard_class=_count(q.hard_class for q in stale if q.hard_class),
        baseline_by_form=slice_summaries(old.by_form) if old else {},
        baseline_by_hard_class=slice_summaries(old.by_hard_class) if old else {},
    )


def _count(values: Iterable[str]) -> dict[str, int]:
    return dict(Counter(values))

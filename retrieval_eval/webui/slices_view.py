"""The run page's slice rates as the verdict judged them: without the stale questions.

A stale question (every target gone from the index) is a miss no retriever could avoid, so the
verdict leaves it out of both runs before comparing (:mod:`retrieval_eval.verdicts.regression`).
The run's own slice rates still count it, and beside a green verdict they told another story:
a slice that lost two of its five questions to a rebuild read 40 points down. When the verdict
lists stale questions, the run page shows each slice's rates over the questions left, this
run's and its baseline's, by the verdict's rule, and says how many of each slice were left out. A run whose verdict left nothing out has none (its own rates stand).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from retrieval_eval.evaluation.results import SliceRates
from retrieval_eval.store.summary import SliceSummary, slice_summaries

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import QuestionResult
    from retrieval_eval.store import Store, StoredRun


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


def judged_slices(
    store: Store, stored: StoredRun, baseline: StoredRun | None
) -> JudgedSlices | None:
    """The slices as judged, or None when the verdict left no question out.

    The verdict's rule, without loading either run: each stored slice's counts less those of its
    stale questions, which are read by id (a run page stays the cost of its page).
    """
    verdict = stored.verdict
    if verdict is None or not verdict.stale_questions:
        return None
    left_out = list(verdict.stale_questions)
    stale = list(store.questions.by_id(stored.id, left_out).values())
    old = list(store.questions.by_id(baseline.id, left_out).values()) if baseline else []
    return JudgedSlices(
        left_out=left_out,
        questions=stored.result.question_count - len(stale),
        by_form=_less(stored.result.by_form, stale, "form"),
        by_hard_class=_less(stored.result.by_hard_class, stale, "hard_class"),
        stale_by_form=_count(q.form.value for q in stale),
        stale_by_hard_class=_count(q.hard_class for q in stale if q.hard_class),
        baseline_by_form=_less(baseline.result.by_form, old, "form") if baseline else {},
        baseline_by_hard_class=(
            _less(baseline.result.by_hard_class, old, "hard_class") if baseline else {}
        ),
    )


def _less(
    slices: dict[str, SliceRates], gone: list[QuestionResult], dimension: str
) -> dict[str, SliceSummary]:
    """``slices`` without the questions ``gone`` (a slice left with none is dropped)."""
    kept: dict[str, SliceRates] = {}
    for value, rates in slices.items():
        out = [q for q in gone if _value(q, dimension) == value]
        n = rates.questions - len(out)
        if n <= 0:
            continue
        top1 = rates.top1_hits - sum(q.top1_hit for q in out)
        top3 = rates.top3_hits - sum(q.top3_hit for q in out)
        kept[value] = SliceRates(
            questions=n,
            top1_hits=top1,
            top3_hits=top3,
            top1_hit_rate=top1 / n,
            top3_hit_rate=top3 / n,
            # every gated depth the slice has hits at, less the stale questions' hits there
            hits_at={d: hits - sum(q.hit_at(d) for q in out) for d, hits in rates.hits_at.items()},
        )
    return slice_summaries(kept)


def _value(question: QuestionResult, dimension: str) -> str | None:
    return question.form.value if dimension == "form" else question.hard_class


def _count(values: Iterable[str]) -> dict[str, int]:
    return dict(Counter(values))

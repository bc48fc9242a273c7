"""The regression verdict as data: its state, the figures of each gated depth and slice, the
flipped questions. The store keeps it and reports word it; :mod:`retrieval_eval.verdicts.regression`
decides it. A domain module, so the store reads a verdict without importing the judging.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.config.lookup import Severity
from retrieval_eval.verdicts.significance import holm, mcnemar_exact

VerdictState = Literal["baseline", "not_comparable", "no_regression", "regression", "invalid_run"]


class SliceRegression(BaseModel):
    """A slice's drop beyond its threshold at one gated depth, with the figures that judged it
    (None in verdicts stored before slices were tested): its McNemar p on the slice's flips,
    Holm-adjusted across every slice and depth compared, and the smallest drop its size
    detects (None: none up to its rate)."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    dimension: Literal["form", "hard_class"]
    value: str
    metric: str  # the gated depth that dropped: "top1", "top3", "top5", ...
    baseline: float
    current: float
    delta: float
    questions: int | None = None  # the slice's size (the smaller of the two runs')
    max_drop: float | None = None
    p_value: float | None = None
    p_holm: float | None = None
    detectable_drop: float | None = None
    severity: Severity = "error"

    @property
    def scope(self) -> str:
        """The slice as the config and lint name it: ``form=match``."""
        return f"{self.dimension}={self.value}"


class DepthChange(BaseModel):
    """One gated depth against the baseline, over the questions both runs were judged on.

    ``compared`` is False when the baseline did not fetch that deep (it asked its retriever for
    fewer ids than the depth): nothing is judged there. ``p_value`` is McNemar's exact test on
    this depth's flips, ``p_holm`` the same Holm-adjusted across the verdict's gated depths.
    """

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    compared: bool = True
    baseline: float | None = None
    current: float | None = None
    delta: float | None = None
    delta_ci: tuple[float, float] | None = None  # Newcombe's paired 95 % interval
    max_drop: float
    dropped: bool = False  # the overall drop is beyond max_drop
    severity: Severity = "error"  # warn: a drop shows in ``warnings``, not as a regression
    flipped_to_miss: list[str] = Field(default_factory=list)
    flipped_to_hit: list[str] = Field(default_factory=list)
    p_value: float | None = None
    p_holm: float | None = None


class Verdict(BaseModel):
    """What a person or CI acts on. Deltas are current minus baseline (negative = worse)."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    state: VerdictState
    baseline_run_id: int | None = None
    top1_delta: float | None = None
    top3_delta: float | None = None
    top1_baseline: float | None = None
    top1_current: float | None = None
    top3_baseline: float | None = None
    top3_current: float | None = None
    is_regression: bool = False
    slice_regressions: list[SliceRegression] = Field(default_factory=list)
    # slice drops beyond their threshold that only warn (severity warn), and those too small
    # to judge: neither significant nor from a slice large enough to detect its threshold
    slice_warnings: list[SliceRegression] = Field(default_factory=list)
    slices_too_small: list[SliceRegression] = Field(default_factory=list)
    flipped_to_miss: list[str] = Field(default_factory=list)
    flipped_to_hit: list[str] = Field(default_factory=list)
    top3_flipped_to_miss: list[str] = Field(default_factory=list)
    top3_flipped_to_hit: list[str] = Field(default_factory=list)
    p_value: float | None = None
    # 95 % paired intervals of the deltas over the questions both runs have ([low, high])
    top1_delta_ci: tuple[float, float] | None = None
    top3_delta_ci: tuple[float, float] | None = None
    latency_regression: bool = False
    latency_p95_ratio: float | None = None
    # every gated depth of a compared run, shallowest first (top-1 and top-3 as well: the
    # fields above are the seed's and stay as they were)
    by_depth: dict[int, DepthChange] = Field(default_factory=dict)
    # dead labels (retrieval_eval.evaluation.labels): the current run's dead ids, and the questions left out
    # of the judgement because every target is dead in this run or the baseline
    dead_ids: list[str] = Field(default_factory=list)
    stale_questions: list[str] = Field(default_factory=list)
    # questions only one run has, left out when either is re-judged (sets rejudge: its
    # original never asked them)
    unpaired_questions: list[str] = Field(default_factory=list)
    # how many of this run's questions were compared when stale or unpaired ones were left out
    # (the rates and deltas above are over these); None when nothing was left out
    compared_questions: int | None = None
    # a run whose index lost labelled documents, kept from becoming a baseline
    # (dead_labels_baseline: refuse) until `retrieval-eval runs accept`
    baseline_refused: bool = False
    # refused as a baseline until someone approves it (approve_baseline: a run under changed
    # labels), not for dead labels
    needs_approval: bool = False
    # the index builds this run and its baseline measured, when compared (None: not recorded)
    index_version: str | None = None
    baseline_index_version: str | None = None
    reasons: list[str] = Field(default_factory=list)  # what regressed, one phrase each
    warnings: list[str] = Field(default_factory=list)  # warn checks that fired, one phrase each
    summary: str = ""

    def contract(self) -> dict[str, object]:
        """The ``regression`` object of ``run --format json``."""
        return self.model_dump(mode="json")

    def changes(self) -> dict[int, DepthChange]:
        """Every gated depth's change (empty when nothing was compared). A verdict stored
        before depths were configurable has top-1 and top-3 in the seed's fields: read as such,
        their McNemar p-values (Holm-adjusted) counted from the flips."""
        if self.by_depth or self.state not in ("regression", "no_regression"):
            return self.by_depth
        changes = {
            depth: DepthChange(
                baseline=getattr(self, f"{key}_baseline"),
                current=getattr(self, f"{key}_current"),
                delta=getattr(self, f"{key}_delta"),
                delta_ci=getattr(self, f"{key}_delta_ci"),
                max_drop=0.0,  # not stored: the reasons said which depths dropped
                flipped_to_miss=misses,
                flipped_to_hit=gains,
                p_value=mcnemar_exact(len(misses), len(gains)),
            )
            for depth, key, misses, gains in (
                (1, "top1", self.flipped_to_miss, self.flipped_to_hit),
                (3, "top3", self.top3_flipped_to_miss, self.top3_flipped_to_hit),
            )
        }
        holm_adjust(changes)
        return changes


def holm_adjust(changes: dict[int, DepthChange]) -> None:
    """Set each compared depth's ``p_holm``: its McNemar p Holm-adjusted across them."""
    compared = [d for d, change in changes.items() if change.p_value is not None]
    adjusted = holm([changes[d].p_value or 1.0 for d in compared])
    for depth, p_holm in zip(compared, adjusted, strict=True):
        changes[depth].p_holm = p_holm

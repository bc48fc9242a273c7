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
# why a run was not compared (or, for an invalid run, what else was wrong), as a code that
# reports word: the baseline is of another set, its labels changed, it is invalid; the set's
# labels changed since the last stored run (a new baseline starts, or awaits approval); the
# store could not be reached, or a newer retrieval-eval migrated it
Cause = Literal[
    "other_set",
    "labels_changed_since_baseline",
    "baseline_invalid",
    "labels_changed",
    "awaiting_approval",
    "store_unreachable",
    "store_too_new",
]


class LabelsAttention(BaseModel):
    """The run's dead-label check in figures, when it found dead ids: how many ids are gone,
    how many questions lost every target (stale) or some (partly dead), and how it looked."""

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    dead: int
    stale: int
    partly_dead: int
    source: str = ""


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
    # what the verdict is worded from (reports.verdict), beside the figures above: why nothing
    # was compared and its figures, the run's size when invalid, the pair a first run starts,
    # the overall checks' severity and latency limit, the labels a re-judged run was scored
    # against, and the flags of what became of the run
    cause: Cause | None = None
    baseline_set: str | None = None  # cause other_set: the baseline's set
    store_problem: str | None = None  # cause store_*: what failed and where the run went
    errored: int | None = None  # invalid_run: questions that errored, of ``questions``
    questions: int | None = None
    set_identifier: str | None = None  # baseline: the (set, retriever) it starts
    retriever: str | None = None
    severity: Severity | None = None  # the overall checks' (depth drops, latency)
    max_latency_p95_increase: float | None = None
    labels_attention: LabelsAttention | None = None
    refused_for_dead_labels: bool = False  # baseline_refused by dead_labels_baseline: refuse
    not_saved: bool = False  # judged but not saved (run --no-save): a first run starts nothing
    rejudged_from: int | None = None  # the stored run re-judged, against these labels:
    labels_version: int | None = None
    labels_fingerprint: str | None = None
    # the words of verdicts stored before they were worded when read (reports.verdict reads
    # them as they are); a verdict decided now leaves them empty
    reasons: list[str] = Field(default_factory=list)  # what regressed, one phrase each
    warnings: list[str] = Field(default_factory=list)  # warn checks that fired, one phrase each
    summary: str = ""

    @property
    def worded_when_decided(self) -> bool:
        """Stored by a version that put its sentences in the verdict (every one had a summary)."""
        return bool(self.summary)

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

"""A stored run's summary: the one set of figures ``history``, the dashboard and the leaderboard
read about a run, without its questions.

Built by :meth:`RunSummary.of` from a :class:`~retrieval_eval.store.models.StoredRun` (the Store
hands out lists of them from :meth:`~retrieval_eval.store.runs.Runs.summaries`). The deltas and
compared rates are the ones the run's verdict recorded when it was saved.

Edge cases: an invalid run names no baseline (as the store reads it); a run without questions has
no rates and no intervals; ``compared_questions`` and the compared rates are set only when the
verdict left stale-label questions out (the deltas are then over fewer questions than the
rates); slices are left empty unless asked for.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from pydantic import Field

from retrieval_eval.evaluation.results import DEPTHS, AtDepths, SliceRates

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.store.models import StoredRun
    from retrieval_eval.verdicts.models import Verdict

_COMPARED = ("top1_baseline", "top1_current", "top3_baseline", "top3_current")
# the figures a summary takes from its run's result, and from the stored run, by their names
_FROM_RESULT = (
    "retriever",
    "question_count",
    "top1_hits",
    "top3_hits",
    "top1_hit_rate",
    "top3_hit_rate",
    "top1_hit_rate_ci",
    "top3_hit_rate_ci",
    "depths",
    "hits_at",
    "error_count",
    "labels_fingerprint",
    "corpus_revision",
    "index_version",
    "package_version",
    "set_version",
)
_FROM_STORED = (
    "run_date",
    "status",
    "verdict_state",
    "is_regression",
    "accepted_baseline",
    "baseline_run_id",
)


def _ranking_metrics(r: RunResult) -> dict[str, Any]:
    """The run's MRR (with the depth it was computed over) and nDCG@k, where it computed them."""
    ndcg = {int(name[5:]): v for name, v in r.metrics.items() if name.startswith("ndcg@")}
    mrr = r.metrics.get("mrr")
    depth = r.settings.fetch_limit if mrr is not None else None
    return {"mrr": mrr, "mrr_depth": depth, "ndcg_at": dict(sorted(ndcg.items()))}


class SliceSummary(AtDepths):
    """One slice's figures; ``hits_at`` (and so ``hit_rate(k)``, ``hit_rate_ci(k)``) at every
    gated depth of its run."""

    questions: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    # 95 % Wilson intervals (low, high) of the slice's hits; None for an empty slice
    top1_hit_rate_ci: tuple[float, float] | None = None
    top3_hit_rate_ci: tuple[float, float] | None = None

    def counted(self) -> int:
        return self.questions


class RunSummary(AtDepths):
    """The figures of one stored run; deltas are the ones its verdict recorded at save time.

    Every gated depth (``depths``) has its hits in ``hits_at`` and its delta in ``delta_at``
    (the verdict's; top-1 and top-3 are also the seed's ``top1_*`` and ``top3_*`` fields).
    """

    run_id: int
    set: str
    retriever: str
    run_date: datetime
    status: str
    verdict_state: str | None
    is_regression: bool
    accepted_baseline: bool
    baseline_run_id: int | None
    question_count: int
    top1_hits: int
    top3_hits: int
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    top1_delta: float | None = None
    top3_delta: float | None = None
    depths: list[int] = Field(default_factory=lambda: list(DEPTHS))
    delta_at: dict[int, float | None] = Field(default_factory=dict)
    # set only when stale labels were left out: the deltas are over these questions and rates
    compared_questions: int | None = None
    baseline_at: dict[int, float | None] = Field(default_factory=dict)
    current_at: dict[int, float | None] = Field(default_factory=dict)
    top1_baseline: float | None = None
    top1_current: float | None = None
    top3_baseline: float | None = None
    top3_current: float | None = None
    # 95 % Wilson intervals (low, high); None for a run without questions
    top1_hit_rate_ci: tuple[float, float] | None = None
    top3_hit_rate_ci: tuple[float, float] | None = None
    error_count: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    labels_fingerprint: str | None
    corpus_revision: str | None
    # the index build measured and the retrieval-eval that scored it (None: not recorded); the
    # baseline's index version as the verdict recorded it when the run was compared
    index_version: str | None = None
    package_version: str | None = None
    baseline_index_version: str | None = None
    # the words of a verdict stored with them (older versions); one stored as data is worded
    # when read, from ``verdict`` (kept out of dumps): reports.verdict.verdict_summary
    verdict_summary: str = ""
    # a Verdict (typed Any: the summary's schema does not build the verdict's, nor import it)
    verdict: Any = Field(default=None, exclude=True, repr=False)
    by_form: dict[str, SliceSummary] = Field(default_factory=dict)
    by_hard_class: dict[str, SliceSummary] = Field(default_factory=dict)
    # expected ids the run's dead-label check found gone (0: none, or not checked): `history`
    # and the dashboard's rows and chart marks say "labels: N dead ids"
    dead_label_count: int = 0
    # the set version its labels come from (sets promote; None: unversioned), and for a
    # re-judged run (sets rejudge) the run it re-judges and the labels that run was judged with
    set_version: int | None = None
    rejudged_from: int | None = None
    original_labels: str | None = None
    # the ranking metrics the run computed (None / empty: not computed, or a re-judged run's MRR
    # not recomputed): MRR over the distinct documents fetched, to ``mrr_depth`` results (the
    # run's fetch limit, shown "MRR@40"), and nDCG at each cutoff
    mrr: float | None = None
    mrr_depth: int | None = None
    ndcg_at: dict[int, float | None] = Field(default_factory=dict)

    @property
    def run_labels(self) -> str | None:
        """The labels the run was first judged against: a re-judged run's original's."""
        return self.original_labels or self.labels_fingerprint

    @classmethod
    def of(cls, run: StoredRun, *, slices: bool = True) -> RunSummary:
        """The summary of a stored run (its questions need not be loaded); ``slices=False``
        leaves ``by_form`` and ``by_hard_class`` empty."""
        return cls.of_result(
            run.result,
            run.verdict,
            run_id=run.id,
            slices=slices,
            **{name: getattr(run, name) for name in _FROM_STORED},
        )

    @classmethod
    def recorded(cls, result: RunResult, verdict: Verdict, run_id: int | None) -> RunSummary:
        """The summary of a run just judged (saved as ``run_id``, or spooled: 0), as the store
        will read it back: what the alerts and the DAG's log lines say."""
        return cls.of_result(
            result,
            verdict,
            run_id=run_id or 0,
            run_date=result.started_at,
            status="valid" if result.valid else "invalid",
            verdict_state=verdict.state,
            is_regression=verdict.is_regression,
            accepted_baseline=False,
            baseline_run_id=verdict.baseline_run_id if result.valid else None,
        )

    @classmethod
    def of_result(
        cls, r: RunResult, verdict: Verdict | None, *, slices: bool = True, **stored: Any
    ) -> RunSummary:
        return cls(
            set=r.set_identifier,
            latency_p50_ms=r.latency_ms.p50,
            latency_p95_ms=r.latency_ms.p95,
            dead_label_count=len(r.dead_labels.dead_ids) if r.dead_labels else 0,
            rejudged_from=r.rejudged.from_run_id if r.rejudged else None,
            original_labels=r.rejudged.from_labels_fingerprint if r.rejudged else None,
            by_form=slice_summaries(r.by_form) if slices else {},
            by_hard_class=slice_summaries(r.by_hard_class) if slices else {},
            **_ranking_metrics(r),
            **{name: getattr(r, name) for name in _FROM_RESULT},
            **stored,
            **_verdict_figures(verdict),
        )

    def counted(self) -> int:
        return self.question_count

    def delta(self, depth: int) -> float | None:
        """The verdict's change at ``depth`` (None: not compared, or not gated)."""
        if depth in self.delta_at:
            return self.delta_at[depth]
        return getattr(self, f"top{depth}_delta") if depth in DEPTHS else None

    def before_after(self, key: str) -> tuple[float | None, float | None]:
        """The baseline's and this run's ``key`` (``top1``, ``top3``, ``top5``, ...) rate over
        the same questions: the verdict's compared rates when stale ones were left out, else
        this run's rate and the rate minus the delta; (None, rate) with nothing compared."""
        depth = int(key.removeprefix("top"))
        if self.compared_questions is not None:
            if depth in self.current_at:
                return self.baseline_at.get(depth), self.current_at[depth]
            return getattr(self, f"{key}_baseline", None), getattr(self, f"{key}_current", None)
        rate, delta = self.hit_rate(depth), self.delta(depth)
        return (None if rate is None or delta is None else rate - delta), rate


def _verdict_figures(verdict: Verdict | None) -> dict[str, Any]:
    if verdict is None:
        return {}
    changes = verdict.changes()
    figures: dict[str, Any] = {
        "top1_delta": verdict.top1_delta,
        "top3_delta": verdict.top3_delta,
        "delta_at": {d: c.delta for d, c in changes.items()},
        "verdict_summary": verdict.summary,
        "verdict": verdict,
        "baseline_index_version": verdict.baseline_index_version,
    }
    if verdict.compared_questions is not None:  # stale questions were left out
        figures["compared_questions"] = verdict.compared_questions
        figures.update({key: getattr(verdict, key) for key in _COMPARED})
        figures["baseline_at"] = {d: c.baseline for d, c in changes.items()}
        figures["current_at"] = {d: c.current for d, c in changes.items()}
    return figures


def slice_summaries(slices: dict[str, SliceRates]) -> dict[str, SliceSummary]:
    """Each slice's size, rates and intervals, as the pages and JSON show them."""
    return {
        value: SliceSummary.model_validate(s, from_attributes=True) for value, s in slices.items()
    }


def like_with_like(runs: list[RunSummary]) -> list[RunSummary]:
    """``runs`` (newest first) as judged against the newest run's labels where a re-judged run
    (``sets rejudge``) has them: each original judged against older labels gives way to its
    re-judged run with the newest labels, so every rate and verdict listed is over the same
    labels; runs without such a twin stay as stored. ``history`` and the dashboard show this."""
    if not runs:
        return runs
    newest = runs[0].labels_fingerprint
    replaced = {
        run.rejudged_from
        for run in runs
        if run.rejudged_from is not None and run.labels_fingerprint == newest
    }
    return [
        run
        for run in runs
        if run.run_id not in replaced
        and (run.rejudged_from is None or run.labels_fingerprint == newest)
    ]


def label_changes(runs: list[RunSummary]) -> list[int]:
    """Positions (in ``runs``' order) where the labels a run was first judged against differ from
    the run before's: where the set changed, re-judged or not (the history chart marks them)."""
    return [i for i in range(1, len(runs)) if runs[i].run_labels != runs[i - 1].run_labels]

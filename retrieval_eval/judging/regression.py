"""Is this run worse than its baseline? Thresholds, slices, flipped questions, significance.

Rules, written down once:

- A drop regresses when it is strictly greater than its threshold (``max_top1_drop``,
  ``max_top3_drop``; absolute rate drops, 0.10 = ten points). A drop exactly at the threshold does
  not; a tolerance of 1e-9 absorbs float noise such as ``0.8 - 0.7 = 0.10000000000000009``.
- The same thresholds apply to every form and hard-class slice with at least
  ``min_slice_questions`` questions in BOTH runs, so a class that collapses while another improves
  is caught even when the overall rate does not move.
- Flips compare questions by id (questions present in only one run are ignored). The p-value is
  McNemar's exact test on the top-1 flips: two-sided binomial over the discordant pairs. Next to
  it, ``top1_delta_ci`` and ``top3_delta_ci`` are 95 % intervals for the change (current minus
  baseline) over the same paired questions: Newcombe's paired score interval (method 10, see
  :mod:`retrieval_eval.evaluation.intervals`). They are information, not a rule: thresholds decide.
- ``max_latency_p95_increase`` (a ratio: 0.5 = p95 50% slower) is opt-in; when set and exceeded it
  makes the run a regression too.
- Stale labels (:mod:`retrieval_eval.evaluation.labels`): a question all of whose targets are no longer in
  the index cannot be answered, so a miss on it says nothing about retrieval. Before comparing,
  the questions stale in EITHER run (the current run's check, and the baseline's as stored with
  it) are removed from BOTH runs, and everything judged (overall and slice rates, thresholds,
  flips, McNemar, the intervals) is recomputed over the questions left (the same settings, via
  :func:`retrieval_eval.evaluation.aggregate.summarise`). The verdict's rates are then those of the judged
  questions; ``stale_questions`` lists the ids left out and ``dead_ids`` the current run's dead
  ids. A drop explained entirely by dead labels is therefore never a regression. Partly dead
  questions (a target survives) are judged as usual. A run with no stale questions on either
  side is judged exactly as before. Stale labels never make a run invalid or not comparable:
  the labels fingerprint is of the set file, which the index does not change, so a run with
  dead labels is compared with (and may become) a baseline; comparisons with it leave its stale
  questions out.
- States: ``invalid_run`` (too many retriever errors; never compared, never a baseline),
  ``not_comparable`` (labels fingerprint or set differs, or no store), ``baseline`` (nothing to
  compare with yet), ``no_regression``, ``regression``.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.errors import RetrievalEvalError
from retrieval_eval.evaluation.intervals import paired_difference
from retrieval_eval.evaluation.results import RunResult, SliceRates
from retrieval_eval.reports.verdict import compared_summary, regression_reasons

if TYPE_CHECKING:
    # annotations only: reading stored verdicts (history, show) needs no config models or YAML
    from retrieval_eval.config.models import Thresholds

VerdictState = Literal["baseline", "not_comparable", "no_regression", "regression", "invalid_run"]


class Baseline(Protocol):
    """What a verdict needs of the run it compares with: its id, whether it was valid, its
    results. A stored run (:class:`retrieval_eval.store.StoredRun`) is one; the rules here
    know nothing of how or where it was stored."""

    @property
    def id(self) -> int: ...

    @property
    def status(self) -> str: ...

    @property
    def result(self) -> RunResult: ...


_EPS = 1e-9


class RegressionDetected(RetrievalEvalError):
    """A regression, reported with ``--fail-on-regression``: exit code 1."""

    exit_code = 1


class SliceRegression(BaseModel):
    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    dimension: Literal["form", "hard_class"]
    value: str
    metric: Literal["top1", "top3"]
    baseline: float
    current: float
    delta: float


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
    # dead labels (retrieval_eval.evaluation.labels): the current run's dead ids, and the questions left out
    # of the judgement because every target is dead in this run or the baseline
    dead_ids: list[str] = Field(default_factory=list)
    stale_questions: list[str] = Field(default_factory=list)
    # how many of this run's questions were compared when stale ones were left out (the rates
    # and deltas above are over these); None when nothing was left out
    compared_questions: int | None = None
    # a run whose index lost labelled documents, kept from becoming a baseline
    # (dead_labels_baseline: refuse) until `retrieval-eval baseline accept`
    baseline_refused: bool = False
    reasons: list[str] = Field(default_factory=list)  # what regressed, one phrase each
    summary: str = ""

    def contract(self) -> dict[str, object]:
        """The ``regression`` object of ``run --format json``."""
        return self.model_dump(mode="json")


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value for ``b`` and ``c`` discordant pairs (no scipy).

    ``p = min(1, 2 * P(X <= min(b, c)))`` with ``X ~ Binomial(b + c, 1/2)``; 1.0 when there are no
    discordant pairs. Exact rational arithmetic, so large counts do not underflow midway; each
    binomial coefficient comes from the one before (``C(n, i) = C(n, i-1)·(n-i+1)/i``, exact in
    integers), one multiplication and division per term rather than a fresh coefficient each,
    which keeps large discordant counts cheap (a leaderboard of large sets tests N - 1 such pairs).
    """
    if b < 0 or c < 0:
        raise ValueError("flip counts must be zero or more")
    n = b + c
    if n == 0:
        return 1.0
    term = total = 1  # C(n, 0)
    for i in range(1, min(b, c) + 1):
        term = term * (n - i + 1) // i
        total += term
    return float(min(Fraction(1), 2 * Fraction(total, 2**n)))


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm's step-down adjusted p-values, in the order given.

    Sorted ascending, the i-th smallest (from 0) of m is multiplied by m − i, capped at 1, and
    never allowed below the adjusted value before it (so the adjustment keeps the order).
    """
    m = len(p_values)
    adjusted = [0.0] * m
    running = 0.0
    for i, index in enumerate(sorted(range(m), key=lambda j: p_values[j])):
        running = max(running, min(1.0, (m - i) * p_values[index]))
        adjusted[index] = running
    return adjusted


def _delta(current: float | None, baseline: float | None) -> float | None:
    return None if current is None or baseline is None else current - baseline


def _drops(delta: float | None, threshold: float) -> bool:
    return delta is not None and -delta - threshold > _EPS


def _flips(
    current: RunResult, baseline: RunResult, attr: str
) -> tuple[list[str], list[str], tuple[float, float] | None]:
    """Ids that went hit→miss and miss→hit, and the paired 95 % interval of the change."""
    before = {q.id: bool(getattr(q, attr)) for q in baseline.questions}
    to_miss = [q.id for q in current.questions if before.get(q.id) is True and not getattr(q, attr)]
    to_hit = [q.id for q in current.questions if before.get(q.id) is False and getattr(q, attr)]
    paired = [bool(getattr(q, attr)) for q in current.questions if q.id in before]
    both = sum(paired) - len(to_hit)
    neither = len(paired) - both - len(to_hit) - len(to_miss)
    return to_miss, to_hit, paired_difference(both, len(to_hit), len(to_miss), neither)


def _slice_regressions(
    current: RunResult, baseline: RunResult, thresholds: Thresholds
) -> list[SliceRegression]:
    found: list[SliceRegression] = []
    dimensions: list[tuple[Literal["form", "hard_class"], dict[str, SliceRates], dict]] = [
        ("form", current.by_form, baseline.by_form),
        ("hard_class", current.by_hard_class, baseline.by_hard_class),
    ]
    for dimension, now, before in dimensions:
        for value, cur in now.items():
            old = before.get(value)
            if old is None or min(cur.questions, old.questions) < thresholds.min_slice_questions:
                continue
            for metric, c_rate, b_rate, limit in (
                ("top1", cur.top1_hit_rate, old.top1_hit_rate, thresholds.max_top1_drop),
                ("top3", cur.top3_hit_rate, old.top3_hit_rate, thresholds.max_top3_drop),
            ):
                delta = _delta(c_rate, b_rate)
                if c_rate is not None and b_rate is not None and _drops(delta, limit):
                    found.append(
                        SliceRegression(
                            dimension=dimension,
                            value=value,
                            metric=metric,  # type: ignore[arg-type]
                            baseline=b_rate,
                            current=c_rate,
                            delta=c_rate - b_rate,
                        )
                    )
    return found


def _latency_ratio(current: RunResult, baseline: RunResult) -> float | None:
    now, before = current.latency_ms.p95, baseline.latency_ms.p95
    if now is None or before is None or before <= 0:
        return None
    return now / before - 1


def detect_regression(
    current: RunResult,
    baseline: Baseline | None,
    thresholds: Thresholds,
    *,
    comparable: bool = True,
    note: str | None = None,
) -> Verdict:
    """The verdict for ``current`` against ``baseline`` (None: nothing to compare with).

    ``comparable=False`` forces ``not_comparable`` (the caller knows older runs used other
    labels); a baseline whose set or labels fingerprint differs is not comparable either.
    ``note`` is prepended to the summary (why there is no baseline, for instance).
    """
    verdict = _detect(current, baseline, thresholds, comparable=comparable, note=note)
    labels = current.dead_labels
    if labels is None or not labels.dead_ids:
        return verdict
    update: dict[str, object] = {"summary": f"{verdict.summary} {labels.summary()}."}
    if verdict.state not in ("regression", "no_regression"):
        # nothing was compared, so nothing was left out: list the run's own stale questions
        update.update(dead_ids=list(labels.dead_ids), stale_questions=list(labels.stale_questions))
    return verdict.model_copy(update=update)


def _detect(
    current: RunResult,
    baseline: Baseline | None,
    thresholds: Thresholds,
    *,
    comparable: bool,
    note: str | None,
) -> Verdict:
    prefix = f"{note} " if note else ""
    baseline_id = baseline.id if baseline is not None else None
    if not current.valid:
        # never compared, so no baseline run is named (nor stored, nor shown by history)
        return Verdict(
            state="invalid_run",
            summary=f"{prefix}Run invalid: {current.error_count} of {current.question_count} "
            "questions errored; it is not compared and never becomes a baseline.",
        )
    if baseline is not None and comparable:
        old = baseline.result
        if old.set_identifier != current.set_identifier:
            comparable = False
            note = f"baseline run {baseline.id} is for set {old.set_identifier!r}"
        elif old.labels_fingerprint != current.labels_fingerprint:
            comparable = False
            note = f"the golden set's labels changed since baseline run {baseline.id}"
        elif baseline.status != "valid":
            comparable = False
            note = f"baseline run {baseline.id} is invalid"
        prefix = f"{note[0].upper()}{note[1:]}. " if note else prefix
    if not comparable:
        return Verdict(
            state="not_comparable",
            baseline_run_id=baseline_id,
            summary=f"{prefix}Not comparable: no regression check for this run.",
        )
    if baseline is None:
        return Verdict(
            state="baseline",
            summary=f"{prefix}First run for {current.set_identifier} × {current.retriever} with "
            "these labels: it becomes the baseline.",
        )
    return _compare(current, baseline, thresholds)


def _without_stale(current: RunResult, old: RunResult) -> tuple[RunResult, RunResult, list[str]]:
    """Both runs without the questions stale in either (see the module docstring), and their ids."""
    stale = set(current.stale_targets()) | set(old.stale_targets())
    if not stale:
        return current, old, []
    # in the set's order (the current run's, then any only the baseline has)
    order = [q.id for q in (*current.questions, *old.questions) if q.id in stale]
    return _kept(current, stale), _kept(old, stale), list(dict.fromkeys(order))


def _kept(result: RunResult, left_out: set[str]) -> RunResult:
    from retrieval_eval.evaluation.aggregate import summarise

    return summarise(
        [q for q in result.questions if q.id not in left_out],
        set_identifier=result.set_identifier,
        labels_fingerprint=result.labels_fingerprint,
        retriever=result.retriever,
        settings=result.settings,
        set_name=result.set_name,
        corpus_revision=result.corpus_revision,
        started_at=result.started_at,
        finished_at=result.finished_at,
        run_key=result.run_key,
    )


def _compare(current: RunResult, baseline: Baseline, thresholds: Thresholds) -> Verdict:
    dead = list(current.dead_labels.dead_ids) if current.dead_labels else []
    current, old, stale = _without_stale(current, baseline.result)
    top1 = _delta(current.top1_hit_rate, old.top1_hit_rate)
    top3 = _delta(current.top3_hit_rate, old.top3_hit_rate)
    slices = _slice_regressions(current, old, thresholds)
    to_miss, to_hit, top1_ci = _flips(current, old, "top1_hit")
    t3_miss, t3_hit, top3_ci = _flips(current, old, "top3_hit")
    ratio = _latency_ratio(current, old)
    limit = thresholds.max_latency_p95_increase
    slow = limit is not None and ratio is not None and ratio - limit > _EPS
    top1_dropped = _drops(top1, thresholds.max_top1_drop)
    top3_dropped = _drops(top3, thresholds.max_top3_drop)
    regressed = top1_dropped or top3_dropped or bool(slices) or slow
    verdict = Verdict(
        state="regression" if regressed else "no_regression",
        baseline_run_id=baseline.id,
        top1_delta=top1,
        top3_delta=top3,
        top1_baseline=old.top1_hit_rate,
        top1_current=current.top1_hit_rate,
        top3_baseline=old.top3_hit_rate,
        top3_current=current.top3_hit_rate,
        is_regression=regressed,
        slice_regressions=slices,
        flipped_to_miss=to_miss,
        flipped_to_hit=to_hit,
        top3_flipped_to_miss=t3_miss,
        top3_flipped_to_hit=t3_hit,
        p_value=mcnemar_exact(len(to_miss), len(to_hit)),
        top1_delta_ci=top1_ci,
        top3_delta_ci=top3_ci,
        latency_regression=slow,
        latency_p95_ratio=ratio,
        dead_ids=dead,
        stale_questions=stale,
        compared_questions=current.question_count if stale else None,
    )
    reasons = regression_reasons(verdict, thresholds, top1=top1_dropped, top3=top3_dropped)
    return verdict.model_copy(
        update={"reasons": reasons, "summary": compared_summary(verdict, reasons)}
    )

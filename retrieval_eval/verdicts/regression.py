"""Is this run worse than its baseline? Thresholds, slices, flipped questions, significance.

Rules, written down once:

- The run's gated depths (``settings.depths``, top-1 and top-3 by default) are judged, each on
  its own (``by_depth``): a drop regresses when it is strictly greater than the depth's threshold
  (``max_topK_drop``; absolute rate drops, 0.10 = ten points). A drop exactly at the threshold does
  not; a tolerance of 1e-9 absorbs float noise such as ``0.8 - 0.7 = 0.10000000000000009``. The
  baseline's hits are counted at the current run's depths from its questions (its first hit rank
  covers everything it fetched), so changing the depths keeps the baseline; a depth deeper than
  the baseline fetched is not compared.
- The same thresholds (or a slice's own, ``thresholds.slices``) apply to every form and
  hard-class slice with at least ``min_slice_questions`` questions in BOTH runs, so a class that
  collapses while another improves is caught even when the overall rate does not move. A small
  slice moves a lot by chance (one question of six is 17 points), so a slice's drop beyond its
  threshold regresses only when it is also significant (McNemar's exact test on the slice's
  flips, Holm-adjusted across every slice and depth compared, at most ``lint.alpha``) or the slice
  is large enough to detect its threshold (the power figure ``sets lint`` computes,
  :func:`retrieval_eval.lint.power.figure`, at the baseline's slice rate). A drop that is neither
  is listed as too small to judge (``slices_too_small``), never a regression.
- Severity (as dbt's tests): a check whose ``severity`` is ``warn`` (``thresholds.severity`` for
  the overall drops and latency, a slice's own else that) is listed in ``warnings`` (and a slice
  in ``slice_warnings``) and does not make the run a regression; ``error`` (the default) does.
- Flips compare questions by id (questions present in only one run are ignored), at each gated
  depth. Each depth's p-value is McNemar's exact test on its flips (two-sided binomial over the
  discordant pairs), with ``p_holm`` Holm-adjusted across the depths; ``p_value`` is top-1's.
  Next to them, ``delta_ci`` (``top1_delta_ci`` and ``top3_delta_ci`` for the seed's two) is a
  95 % interval for the change (current minus baseline) over the same paired questions:
  Newcombe's paired score interval (method 10, see :mod:`retrieval_eval.evaluation.intervals`).
  They are information, not a rule: thresholds decide.
- The seed's fields (``top1_delta``, ``flipped_to_miss``, ``top3_flipped_to_miss``, ...) keep
  top-1 and top-3 whichever depths are gated; only gated depths can regress.
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

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, Protocol

from retrieval_eval.errors import RetrievalEvalError
from retrieval_eval.evaluation.intervals import paired_difference
from retrieval_eval.evaluation.results import QuestionResult, RunResult, SliceRates
from retrieval_eval.verdicts.models import (
    Cause,
    DepthChange,
    LabelsAttention,
    SliceRegression,
    Verdict,
    holm_adjust,
)
from retrieval_eval.verdicts.significance import holm, mcnemar_exact

if TYPE_CHECKING:
    # annotations only: reading stored verdicts (history, show) needs no config models or YAML
    from retrieval_eval.config.models import Thresholds


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


def _delta(current: float | None, baseline: float | None) -> float | None:
    return None if current is None or baseline is None else current - baseline


def _drops(delta: float | None, threshold: float) -> bool:
    return delta is not None and -delta - threshold > _EPS


def _flips(
    current: RunResult, baseline: RunResult, depth: int
) -> tuple[list[str], list[str], tuple[float, float] | None]:
    """Ids that went hit→miss and miss→hit at ``depth``, and the paired 95 % interval of the
    change."""
    return _flips_among(current.questions, baseline.questions, depth)


def _flips_among(
    current: Sequence[QuestionResult], baseline: Sequence[QuestionResult], depth: int
) -> tuple[list[str], list[str], tuple[float, float] | None]:
    """:func:`_flips` over these questions of each run (a slice's, say)."""
    before = {q.id: q.hit_at(depth) for q in baseline}
    now = [(q.id, q.hit_at(depth)) for q in current]
    to_miss = [qid for qid, hit in now if before.get(qid) is True and not hit]
    to_hit = [qid for qid, hit in now if before.get(qid) is False and hit]
    paired = [hit for qid, hit in now if qid in before]
    both = sum(paired) - len(to_hit)
    neither = len(paired) - both - len(to_hit) - len(to_miss)
    return to_miss, to_hit, paired_difference(both, len(to_hit), len(to_miss), neither)


@dataclass
class _SliceTest:
    """One slice at one depth, tested: its figures and whether its drop is beyond its threshold."""

    change: SliceRegression
    depth: int
    dropped: bool


def _slice_tests(
    current: RunResult, baseline: RunResult, thresholds: Thresholds, depths: Sequence[int]
) -> list[_SliceTest]:
    """Every slice compared (at least ``min_slice_questions`` in both runs) at every compared
    gated depth: rates, its threshold, McNemar on the slice's flips, Holm-adjusted across all."""
    tests: list[_SliceTest] = []
    dimensions: list[tuple[Literal["form", "hard_class"], dict[str, SliceRates], dict]] = [
        ("form", current.by_form, baseline.by_form),
        ("hard_class", current.by_hard_class, baseline.by_hard_class),
    ]
    for dimension, now, before in dimensions:
        members = _members(current, dimension), _members(baseline, dimension)
        for value, cur in now.items():
            old = before.get(value)
            if old is None:
                continue
            size = min(cur.questions, old.questions)  # a slice is as small as its smaller run
            if size < thresholds.min_slice_questions:
                continue
            scope = f"{dimension}={value}"
            for depth in depths:
                c_rate, b_rate = cur.hit_rate(depth), old.hit_rate(depth)
                if c_rate is None or b_rate is None:
                    continue
                to_miss, to_hit, _ = _flips_among(
                    members[0].get(value, []), members[1].get(value, []), depth
                )
                limit = thresholds.max_drop(depth, scope)
                change = SliceRegression(
                    dimension=dimension,
                    value=value,
                    metric=f"top{depth}",
                    baseline=b_rate,
                    current=c_rate,
                    delta=c_rate - b_rate,
                    questions=size,
                    max_drop=limit,
                    p_value=mcnemar_exact(len(to_miss), len(to_hit)),
                    severity=thresholds.severity_of(scope),
                )
                tests.append(_SliceTest(change, depth, _drops(c_rate - b_rate, limit)))
    adjusted = holm([t.change.p_value or 1.0 for t in tests])
    for test, p_holm in zip(tests, adjusted, strict=True):
        test.change.p_holm = p_holm
    return tests


def _members(result: RunResult, dimension: str) -> dict[str, list[QuestionResult]]:
    """The run's questions by their value in ``dimension``: their form, or their hard class
    (a question without one is in no hard-class slice)."""
    groups: dict[str, list[QuestionResult]] = {}
    for q in result.questions:
        value = q.form.value if dimension == "form" else q.hard_class
        if value is not None:
            groups.setdefault(value, []).append(q)
    return groups


def _judge_slices(
    current: RunResult, baseline: RunResult, thresholds: Thresholds, depths: Sequence[int]
) -> tuple[list[SliceRegression], list[SliceRegression], list[SliceRegression]]:
    """The slice drops beyond their threshold, judged (see the module docstring): those that
    regress, those that only warn (severity ``warn``), and those too small to judge."""
    from retrieval_eval.lint.power import figure

    options = thresholds.power_options()
    regressed: list[SliceRegression] = []
    warned: list[SliceRegression] = []
    too_small: list[SliceRegression] = []
    for test in _slice_tests(current, baseline, thresholds, depths):
        if not test.dropped:
            continue
        change = test.change
        power = figure(
            change.scope,
            test.depth,
            change.questions or 0,
            change.baseline,
            change.max_drop or 0.0,
            options,
        )
        change.detectable_drop = power.detectable_drop
        significant = change.p_holm is not None and change.p_holm <= options.alpha
        if not significant and power.threshold_too_small:
            too_small.append(change)
        elif change.severity == "warn":
            warned.append(change)
        else:
            regressed.append(change)
    return regressed, warned, too_small


def _seed_flips(
    gated: dict[int, DepthChange], current: RunResult, old: RunResult, depth: int
) -> tuple[list[str], list[str], tuple[float, float] | None]:
    """The seed's flip fields at ``depth`` (1 or 3): the gated depth's, else counted here."""
    change = gated.get(depth)
    if change is None or not change.compared:
        return _flips(current, old, depth)
    return change.flipped_to_miss, change.flipped_to_hit, change.delta_ci


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
    cause: Cause | None = None,
    store_problem: str | None = None,
) -> Verdict:
    """The verdict for ``current`` against ``baseline`` (None: nothing to compare with), as data:
    :mod:`retrieval_eval.reports.verdict` words it.

    ``comparable=False`` forces ``not_comparable`` (the caller knows older runs used other
    labels); a baseline whose set or labels fingerprint differs is not comparable either.
    ``cause`` says why the caller found nothing to compare (the labels changed, the store could
    not be reached: ``store_problem`` says what failed and where the run went).
    """
    verdict = _detect(current, baseline, thresholds, comparable=comparable, cause=cause)
    verdict.store_problem = (
        store_problem if verdict.cause in ("store_unreachable", "store_too_new") else None
    )
    verdict.severity = thresholds.severity
    verdict.max_latency_p95_increase = thresholds.max_latency_p95_increase
    labels = current.dead_labels
    if labels is None or not labels.dead_ids:
        return verdict
    verdict.labels_attention = LabelsAttention(
        dead=len(labels.dead_ids),
        stale=len(labels.stale_questions),
        partly_dead=len(labels.partly_dead),
        source=labels.source,
    )
    if verdict.state not in ("regression", "no_regression"):
        # nothing was compared, so nothing was left out: list the run's own stale questions
        verdict.dead_ids = list(labels.dead_ids)
        verdict.stale_questions = list(labels.stale_questions)
    return verdict


def _detect(
    current: RunResult,
    baseline: Baseline | None,
    thresholds: Thresholds,
    *,
    comparable: bool,
    cause: Cause | None,
) -> Verdict:
    baseline_id = baseline.id if baseline is not None else None
    if not current.valid:
        # never compared, so no baseline run is named (nor stored, nor shown by history)
        return Verdict(
            state="invalid_run",
            cause=cause,
            errored=current.error_count,
            questions=current.question_count,
        )
    baseline_set = None
    if baseline is not None and comparable:
        old = baseline.result
        if old.set_identifier != current.set_identifier:
            comparable, cause, baseline_set = False, "other_set", old.set_identifier
        elif old.labels_fingerprint != current.labels_fingerprint:
            comparable, cause = False, "labels_changed_since_baseline"
        elif baseline.status != "valid":
            comparable, cause = False, "baseline_invalid"
    if not comparable:
        return Verdict(
            state="not_comparable",
            baseline_run_id=baseline_id,
            cause=cause,
            baseline_set=baseline_set,
        )
    if baseline is None:
        return Verdict(
            state="baseline",
            cause=cause,
            set_identifier=current.set_identifier,
            retriever=current.retriever,
        )
    return _compare(current, baseline, thresholds)


def unpaired(current: RunResult, old: RunResult) -> list[str]:
    """Questions only one of the two runs has, when either is re-judged (``sets rejudge``): a
    re-judged run lacks the questions its original never asked, so both are judged on the
    questions they share. Empty otherwise: two ordinary runs of one fingerprint ask the same."""
    if current.rejudged is None and old.rejudged is None:
        return []
    mine = {q.id for q in current.questions}
    theirs = {q.id for q in old.questions}
    return [
        q.id for q in (*current.questions, *old.questions) if (q.id in mine) != (q.id in theirs)
    ]


def _without_stale(
    current: RunResult, old: RunResult
) -> tuple[RunResult, RunResult, list[str], list[str]]:
    """Both runs without the questions stale in either (see the module docstring) and those
    only one of them has (:func:`unpaired`), and the ids of each; the baseline's figures are at
    the current run's gated depths."""
    stale = set(current.stale_targets()) | set(old.stale_targets())
    alone = unpaired(current, old)
    if not stale and not alone:
        if old.depths != current.depths:  # the baseline gated other depths: re-count its hits
            old = without_questions(old, (), current.depths)
        return current, old, [], []
    # in the set's order (the current run's, then any only the baseline has)
    order = [q.id for q in (*current.questions, *old.questions) if q.id in stale]
    gone = stale | set(alone)
    return (
        without_questions(current, gone),
        without_questions(old, gone, current.depths),
        list(dict.fromkeys(order)),
        alone,
    )


def without_questions(
    result: RunResult, left_out: Collection[str], depths: list[int] | None = None
) -> RunResult:
    """``result`` summarised again without the questions ``left_out``, at ``depths`` (None: its
    own gated depths; otherwise the same settings): the run as the verdict judges it once stale
    questions are left out."""
    from retrieval_eval.evaluation.aggregate import summarise_again

    gone = set(left_out)
    settings = result.settings
    if depths is not None and depths != settings.depths:
        settings = settings.model_copy(update={"depths": list(depths)})
    return summarise_again(
        [q for q in result.questions if q.id not in gone], result, settings=settings
    )


def _by_depth(
    current: RunResult, old: RunResult, thresholds: Thresholds, reach: int
) -> dict[int, DepthChange]:
    """Every gated depth of ``current`` against ``old``: rates, delta and its paired interval,
    whether the drop is beyond the depth's threshold, flips and McNemar (Holm-adjusted across
    the depths compared). A depth deeper than the baseline fetched (``reach``) is not compared."""
    changes: dict[int, DepthChange] = {}
    for depth in current.depths:
        limit = thresholds.max_drop(depth)
        if depth > reach:
            changes[depth] = DepthChange(
                compared=False,
                current=current.hit_rate(depth),
                max_drop=limit,
                severity=thresholds.severity,
            )
            continue
        to_miss, to_hit, interval = _flips(current, old, depth)
        delta = _delta(current.hit_rate(depth), old.hit_rate(depth))
        changes[depth] = DepthChange(
            baseline=old.hit_rate(depth),
            current=current.hit_rate(depth),
            delta=delta,
            delta_ci=interval,
            max_drop=limit,
            dropped=_drops(delta, limit),
            severity=thresholds.severity,
            flipped_to_miss=to_miss,
            flipped_to_hit=to_hit,
            p_value=mcnemar_exact(len(to_miss), len(to_hit)),
        )
    holm_adjust(changes)
    return changes


def _compare(current: RunResult, baseline: Baseline, thresholds: Thresholds) -> Verdict:
    dead = list(current.dead_labels.dead_ids) if current.dead_labels else []
    reach = baseline.result.known_depth  # how deep the baseline's hits can be told
    index_version = current.index_version  # the copies judged below have none
    current, old, stale, alone = _without_stale(current, baseline.result)
    top1 = _delta(current.top1_hit_rate, old.top1_hit_rate)
    top3 = _delta(current.top3_hit_rate, old.top3_hit_rate)
    depths = _by_depth(current, old, thresholds, reach)
    compared = [d for d, change in depths.items() if change.compared]
    slices, slice_warnings, too_small = _judge_slices(current, old, thresholds, compared)
    # the seed's fields: top-1 and top-3 whether gated or not (the same lists when gated)
    to_miss, to_hit, top1_ci = _seed_flips(depths, current, old, 1)
    t3_miss, t3_hit, top3_ci = _seed_flips(depths, current, old, 3)
    ratio = _latency_ratio(current, old)
    limit = thresholds.max_latency_p95_increase
    slow = limit is not None and ratio is not None and ratio - limit > _EPS
    errors = thresholds.severity == "error"
    dropped = any(change.dropped for change in depths.values())
    regressed = bool(slices) or (errors and (dropped or slow))
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
        slice_warnings=slice_warnings,
        slices_too_small=too_small,
        flipped_to_miss=to_miss,
        flipped_to_hit=to_hit,
        top3_flipped_to_miss=t3_miss,
        top3_flipped_to_hit=t3_hit,
        p_value=mcnemar_exact(len(to_miss), len(to_hit)),
        top1_delta_ci=top1_ci,
        top3_delta_ci=top3_ci,
        latency_regression=slow,
        latency_p95_ratio=ratio,
        by_depth=depths,
        dead_ids=dead,
        stale_questions=stale,
        unpaired_questions=alone,
        compared_questions=current.question_count if stale or alone else None,
        index_version=index_version,
        baseline_index_version=baseline.result.index_version,
    )
    return verdict

"""A regression verdict in words: the text block printed after a report (or a Markdown
section), its ``reasons``, ``warnings`` and ``summary`` sentences, and the JSON contract's
``regression`` object that carries them (:func:`verdict_document`).

:mod:`retrieval_eval.verdicts.regression` decides and the store keeps the verdict as data
(states, codes and figures); this module says what it decided, when it is read. A verdict stored
by a version that worded it when deciding (:attr:`Verdict.worded_when_decided`) keeps its words.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_eval.formats.numbers import change, p_value, pct, points, pts, pts_interval

if TYPE_CHECKING:
    from retrieval_eval.verdicts.models import (
        DepthChange,
        LabelsAttention,
        SliceRegression,
        Verdict,
    )

_SHOWN_IDS = 12  # flipped ids listed in the text block; JSON lists them all
_SHOWN_SLICES = 3  # slice regressions named in the summary; the verdict lists them all


def depth_label(depth: int) -> str:
    """How every report names a gated depth: ``top-5``."""
    return f"top-{depth}"


BECOMES_BASELINE = "it becomes the baseline."
# the same first run, judged but not saved (`run --no-save`): nothing stored, no baseline
NOT_SAVED_BASELINE = "it would be the baseline, but it is not saved."
BASELINE_REFUSED = (
    "Not accepted as the baseline: the index lost labelled documents (dead_labels_baseline: "
    "refuse); the previous baseline stays until `retrieval-eval runs accept RUN_ID`."
)
CHANGED = "The golden set's labels changed since the last stored run"
LABELS_CHANGED = f"{CHANGED}; this run starts a new baseline."
AWAITING_APPROVAL = (
    f"{CHANGED}; this run is not the baseline until approved (approve_baseline): in Airflow "
    "(Browse → Required Actions), or with `retrieval-eval runs accept RUN_ID`."
)
# the fields the verdict is worded from: the JSON contract carries their words instead
_WORDED_FROM = {
    "cause",
    "baseline_set",
    "store_problem",
    "errored",
    "questions",
    "set_identifier",
    "retriever",
    "severity",
    "max_latency_p95_increase",
    "labels_attention",
    "refused_for_dead_labels",
    "not_saved",
    "rejudged_from",
    "labels_version",
    "labels_fingerprint",
}


def regression_reasons(verdict: Verdict) -> list[str]:
    """What regressed, one phrase each: each gated depth whose overall drop exceeded its
    threshold, the slice regressions, a latency regression (the overall checks when their
    severity is ``error``)."""
    if verdict.worded_when_decided:
        return list(verdict.reasons)
    return _fired(verdict, "error", verdict.slice_regressions, "regression")


def warning_reasons(verdict: Verdict) -> list[str]:
    """The ``warn`` checks that fired, one phrase each, as :func:`regression_reasons` words
    them: they show in the verdict and alert but do not make the run a regression."""
    if verdict.worded_when_decided:
        return list(verdict.warnings)
    return _fired(verdict, "warn", verdict.slice_warnings, "drop")


def _fired(verdict: Verdict, severity: str, slices: list[SliceRegression], noun: str) -> list[str]:
    overall = (verdict.severity or "error") == severity
    reasons = [
        f"{depth_label(depth)} {pts(change.delta)} (max drop {points(change.max_drop)})"
        for depth, change in verdict.by_depth.items()
        if change.dropped and overall
    ]
    if slices:
        named = [f"{s.scope} {s.metric} {pts(s.delta)}" for s in slices]
        more = f", +{len(named) - _SHOWN_SLICES} more" if len(named) > _SHOWN_SLICES else ""
        reasons.append(
            f"{len(named)} slice {noun}{'s' if len(named) != 1 else ''} "
            f"({', '.join(named[:_SHOWN_SLICES])}{more})"
        )
    limit = verdict.max_latency_p95_increase
    if verdict.latency_regression and limit is not None and overall:
        reasons.append(f"latency p95 {change(verdict.latency_p95_ratio)} (max {change(limit)})")
    return reasons


def verdict_summary(verdict: Verdict) -> str:
    """The verdict in one paragraph: why nothing was compared, or what was (a compared verdict:
    :func:`compared_summary`), then the dead labels, whether the run was refused as a baseline,
    and for a re-judged run the labels it was scored against first."""
    if verdict.worded_when_decided:
        return verdict.summary
    prefix = _cause(verdict)
    if verdict.state == "invalid_run":
        summary = (
            f"{prefix}Run invalid: {verdict.errored} of {verdict.questions} questions errored; "
            "it is not compared and never becomes a baseline."
        )
    elif verdict.state == "not_comparable":
        summary = f"{prefix}Not comparable: no regression check for this run."
    elif verdict.state == "baseline":
        becomes = NOT_SAVED_BASELINE if verdict.not_saved else BECOMES_BASELINE
        summary = (
            f"{prefix}First run for {verdict.set_identifier} × {verdict.retriever} with these "
            f"labels: {becomes}"
        )
    else:
        summary = compared_summary(verdict, regression_reasons(verdict))
    if verdict.labels_attention is not None:
        summary += f" {_attention(verdict.labels_attention)}."
    if verdict.refused_for_dead_labels:
        summary = f"{summary} {BASELINE_REFUSED}".strip()
    if verdict.rejudged_from is not None:
        version = (
            f"version {verdict.labels_version}, " if verdict.labels_version is not None else ""
        )
        labels = f"labels {version}fingerprint {(verdict.labels_fingerprint or '')[:12]}"
        summary = f"Re-judged run {verdict.rejudged_from} against {labels}. {summary}"
    return summary


def _cause(verdict: Verdict) -> str:
    """Why nothing was compared, as the sentence the summary opens with ("" for none)."""
    run = verdict.baseline_run_id
    sentences = {
        "other_set": f"Baseline run {run} is for set {verdict.baseline_set!r}.",
        "labels_changed_since_baseline": f"The golden set's labels changed since baseline run {run}.",
        "baseline_invalid": f"Baseline run {run} is invalid.",
        "labels_changed": LABELS_CHANGED,
        "awaiting_approval": AWAITING_APPROVAL,
        "store_unreachable": f"Result store unreachable: {verdict.store_problem}.",
        "store_too_new": f"Result store not used: {verdict.store_problem}.",
    }
    return f"{sentences[verdict.cause]} " if verdict.cause else ""


def _attention(labels: LabelsAttention) -> str:
    """The dead-label check's line, as :meth:`DeadLabels.summary` words it."""
    from retrieval_eval.evaluation.labels import source_text

    return (
        f"labels need attention: {labels.dead} id{'s' if labels.dead != 1 else ''} no longer in "
        f"the index ({labels.stale} stale question{'s' if labels.stale != 1 else ''}, "
        f"{labels.partly_dead} partly dead; {source_text(labels.source)})"
    )


def verdict_document(verdict: Verdict) -> dict[str, object]:
    """The ``regression`` object of the JSON contract (``run --format json``, ``runs show``, the
    DAG's XCom): the verdict's figures with its ``reasons``, ``warnings`` and ``summary`` worded."""
    document = verdict.model_dump(mode="json", exclude=_WORDED_FROM)
    document["reasons"] = regression_reasons(verdict)
    document["warnings"] = warning_reasons(verdict)
    document["summary"] = verdict_summary(verdict)
    return document


def too_small_to_judge(verdict: Verdict) -> str:
    """The sentence naming the slices whose drop passed their threshold but that are too small
    to judge it (not significant, and too few questions to detect the threshold); "" for none."""
    slices = verdict.slices_too_small
    if not slices:
        return ""
    named = [
        f"{s.scope} {s.metric} {pts(s.delta)} ({s.questions} questions, Holm-adjusted "
        f"p = {p_value(s.p_holm)})"
        for s in slices
    ]
    more = f", +{len(named) - _SHOWN_SLICES} more" if len(named) > _SHOWN_SLICES else ""
    return (
        f"Too small to judge: {', '.join(named[:_SHOWN_SLICES])}{more}: not significant, and "
        f"too few questions to detect the threshold (not a regression)."
    )


def index_versus(now: str | None, before: str | None) -> str:
    """``index 2026-11-30.2 vs 2026-11-29.1`` when both runs recorded the index they measured,
    else "" (one side unknown says nothing about what changed)."""
    return f"index {now} vs {before}" if now and before else ""


def _summary_flips(verdict: Verdict) -> str:
    """The flips a summary names: the shallowest gated depth's, then those of each other depth
    whose drop regressed (with its McNemar p Holm-adjusted across the gated depths)."""
    compared = {d: c for d, c in verdict.by_depth.items() if c.compared}
    if not compared:  # a verdict stored before depths were configurable: top-1's
        return (
            f"top-1 flips: {len(verdict.flipped_to_miss)} hit→miss, "
            f"{len(verdict.flipped_to_hit)} miss→hit (change 95% CI "
            f"{pts_interval(verdict.top1_delta_ci)}, McNemar exact p = {p_value(verdict.p_value)})"
        )
    first, *deeper = compared
    parts = [_flips_phrase(first, compared[first], holm=False)]
    parts += [_flips_phrase(d, compared[d], holm=True) for d in deeper if compared[d].dropped]
    return "; ".join(parts)


def _flips_phrase(depth: int, change: DepthChange, *, holm: bool) -> str:
    adjusted = f", Holm-adjusted {p_value(change.p_holm)}" if holm else ""
    return (
        f"{depth_label(depth)} flips: {len(change.flipped_to_miss)} hit→miss, "
        f"{len(change.flipped_to_hit)} miss→hit (change 95% CI {pts_interval(change.delta_ci)}, "
        f"McNemar exact p = {p_value(change.p_value)}{adjusted})"
    )


def compared_summary(verdict: Verdict, reasons: list[str]) -> str:
    """The sentence of a compared verdict: what regressed (or the rates at every gated depth),
    the flips with their paired interval and McNemar p (:func:`_summary_flips`), and how many
    stale-label questions were left out; the two index builds (:func:`index_versus`) follow the
    baseline run's id."""
    index = index_versus(verdict.index_version, verdict.baseline_index_version)
    flips = _summary_flips(verdict)
    against = f"against run {verdict.baseline_run_id}" + (f" ({index})" if index else "")
    if reasons:
        summary = f"Regression {against}: {'; '.join(reasons)}; {flips}."
    else:
        rates = ", ".join(
            f"{depth_label(d)} {pct(c.baseline)} → {pct(c.current)} ({pts(c.delta)})"
            if c.compared
            else f"{depth_label(d)} {pct(c.current)} (not compared)"
            for d, c in verdict.by_depth.items()
        )
        summary = f"No regression {against}: {rates}; {flips}."
    warnings = warning_reasons(verdict)
    if warnings:
        summary += f" Warnings only (severity warn): {'; '.join(warnings)}."
    small = too_small_to_judge(verdict)
    if small:
        summary += f" {small}"
    stale = len(verdict.stale_questions)
    if stale:
        summary += (
            f" {stale} stale-label question{'s' if stale != 1 else ''} (every target "
            "no longer in the index) left out of both runs."
        )
    return summary


def render_verdict(verdict: Verdict, *, markdown: bool = False) -> str:
    """The text block printed after the report (a Markdown section with ``markdown=True``).

    Compared runs show rates, slice regressions and flipped question ids; the other states show
    their summary sentence.
    """
    head = verdict.state.upper().replace("_", " ")
    # an invalid run is never compared: no baseline named (runs stored before may carry an id)
    if verdict.baseline_run_id is not None and verdict.state != "invalid_run":
        index = index_versus(verdict.index_version, verdict.baseline_index_version)
        head += f" (baseline run {verdict.baseline_run_id}{f'; {index}' if index else ''})"
    lines = [f"Verdict: {head}"]
    if verdict.state in ("regression", "no_regression"):
        changes = verdict.changes()
        lines += [
            f"  {depth_label(d).capitalize()}: {pct(c.baseline)} → {pct(c.current)} ({pts(c.delta)})"
            if c.compared
            else f"  {depth_label(d).capitalize()}: {pct(c.current)} (not compared: the "
            "baseline did not fetch this deep)"
            for d, c in changes.items()
        ]
        lines += [
            f"  {label}: {s.scope} {s.metric} {pct(s.baseline)} → {pct(s.current)} "
            f"({pts(s.delta)}){_slice_figures(s)}"
            for label, slices in (
                ("Slice regression", verdict.slice_regressions),
                ("Slice warning", verdict.slice_warnings),
                ("Too small to judge", verdict.slices_too_small),
            )
            for s in slices
        ]
        several = sum(c.compared for c in changes.values()) > 1
        lines += [
            f"  {depth_label(d).capitalize()} flips: "
            f"{_flip_text(c.flipped_to_miss, c.flipped_to_hit)}; McNemar exact p = "
            f"{p_value(c.p_value)}; change 95% CI {pts_interval(c.delta_ci)}"
            + (f"; Holm-adjusted p = {p_value(c.p_holm)}" if several else "")
            for d, c in changes.items()
            if c.compared
        ]
        if verdict.latency_regression and verdict.latency_p95_ratio is not None:
            lines.append(f"  Latency p95: {change(verdict.latency_p95_ratio)} (latency regression)")
        reasons, warnings = regression_reasons(verdict), warning_reasons(verdict)
        if reasons:
            lines.append(f"  Regressed: {'; '.join(reasons)}")
        if warnings:
            lines.append(f"  Warned (severity warn, not a regression): {'; '.join(warnings)}")
    else:
        lines.append(f"  {verdict_summary(verdict)}")
    if verdict.dead_ids or verdict.stale_questions:
        lines.append(
            f"  Labels need attention: {len(verdict.dead_ids)} id"
            f"{'s' if len(verdict.dead_ids) != 1 else ''} no longer in the index "
            f"({_shown(verdict.dead_ids)}); stale questions left out of the judgement: "
            f"{len(verdict.stale_questions)} ({_shown(verdict.stale_questions)})"
        )
    if markdown:
        return "## Verdict\n\n```\n" + "\n".join(lines) + "\n```\n"
    return "\n".join(lines) + "\n"


def _slice_figures(s: SliceRegression) -> str:
    """What judged a slice: its size, Holm-adjusted McNemar p and detectable drop ("" for a
    verdict stored before slices were tested)."""
    if s.questions is None:
        return ""
    seen = (
        "no drop up to its rate"
        if s.detectable_drop is None
        else f"drops ≥ {points(s.detectable_drop)}"
    )
    return f"; {s.questions} questions, Holm-adjusted p = {p_value(s.p_holm)}, detects {seen}"


def _shown(ids: list[str]) -> str:
    """The first ids, then how many more: ``a, b, +3 more`` (``none`` for no ids)."""
    if not ids:
        return "none"
    more = f", +{len(ids) - _SHOWN_IDS} more" if len(ids) > _SHOWN_IDS else ""
    return ", ".join(ids[:_SHOWN_IDS]) + more


def _flip_text(to_miss: list[str], to_hit: list[str]) -> str:
    def part(ids: list[str], label: str) -> str:
        return f"{len(ids)} {label}" + (f" ({_shown(ids)})" if ids else "")

    return f"{part(to_miss, 'hit→miss')}, {part(to_hit, 'miss→hit')}"

"""A regression verdict in words: the text block printed after a report (or a Markdown
section), and the ``reasons`` and ``summary`` sentences a compared verdict carries.

:mod:`retrieval_eval.judging.regression` decides; this module says what it decided.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_eval.reports.numbers import change, p_value, pct, points, pts, pts_interval

if TYPE_CHECKING:
    from retrieval_eval.config.models import Thresholds
    from retrieval_eval.judging.regression import Verdict

_SHOWN_IDS = 12  # flipped ids listed in the text block; JSON lists them all
_SHOWN_SLICES = 3  # slice regressions named in the summary; the verdict lists them all


def regression_reasons(
    verdict: Verdict, thresholds: Thresholds, *, top1: bool, top3: bool
) -> list[str]:
    """What regressed, one phrase each: the overall drops (``top1``, ``top3``: whether they
    exceeded their thresholds), the slice regressions, a latency regression."""
    reasons = []
    if top1:
        reasons.append(
            f"top-1 {pts(verdict.top1_delta)} (max drop {points(thresholds.max_top1_drop)})"
        )
    if top3:
        reasons.append(
            f"top-3 {pts(verdict.top3_delta)} (max drop {points(thresholds.max_top3_drop)})"
        )
    slices = verdict.slice_regressions
    if slices:
        named = [f"{s.dimension}={s.value} {s.metric} {pts(s.delta)}" for s in slices]
        more = f", +{len(named) - _SHOWN_SLICES} more" if len(named) > _SHOWN_SLICES else ""
        reasons.append(
            f"{len(named)} slice regression{'s' if len(named) != 1 else ''} "
            f"({', '.join(named[:_SHOWN_SLICES])}{more})"
        )
    limit = thresholds.max_latency_p95_increase
    if verdict.latency_regression and limit is not None:
        reasons.append(f"latency p95 {change(verdict.latency_p95_ratio)} (max {change(limit)})")
    return reasons


def index_versus(now: str | None, before: str | None) -> str:
    """``index 2026-11-30.2 vs 2026-11-29.1`` when both runs recorded the index they measured,
    else "" (one side unknown says nothing about what changed)."""
    return f"index {now} vs {before}" if now and before else ""


def compared_summary(verdict: Verdict, reasons: list[str]) -> str:
    """The sentence of a compared verdict: what regressed (or the rates), the top-1 flips with
    their paired interval and McNemar p, and how many stale-label questions were left out; the
    two index builds (:func:`index_versus`) follow the baseline run's id."""
    index = index_versus(verdict.index_version, verdict.baseline_index_version)
    flips = (
        f"top-1 flips: {len(verdict.flipped_to_miss)} hit→miss, "
        f"{len(verdict.flipped_to_hit)} miss→hit (change 95% CI "
        f"{pts_interval(verdict.top1_delta_ci)}, McNemar exact p = {p_value(verdict.p_value)})"
    )
    against = f"against run {verdict.baseline_run_id}" + (f" ({index})" if index else "")
    if reasons:
        summary = f"Regression {against}: {'; '.join(reasons)}; {flips}."
    else:
        rates = (
            f"top-1 {pct(verdict.top1_baseline)} → {pct(verdict.top1_current)} "
            f"({pts(verdict.top1_delta)}), top-3 {pct(verdict.top3_baseline)} → "
            f"{pct(verdict.top3_current)} ({pts(verdict.top3_delta)})"
        )
        summary = f"No regression {against}: {rates}; {flips}."
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
        lines += [
            f"  Top-1: {pct(verdict.top1_baseline)} → {pct(verdict.top1_current)} "
            f"({pts(verdict.top1_delta)})",
            f"  Top-3: {pct(verdict.top3_baseline)} → {pct(verdict.top3_current)} "
            f"({pts(verdict.top3_delta)})",
        ]
        lines += [
            f"  Slice regression: {s.dimension}={s.value} {s.metric} "
            f"{pct(s.baseline)} → {pct(s.current)} ({pts(s.delta)})"
            for s in verdict.slice_regressions
        ]
        lines += [
            f"  Top-1 flips: {_flip_text(verdict.flipped_to_miss, verdict.flipped_to_hit)}; "
            f"McNemar exact p = {p_value(verdict.p_value)}; change 95% CI {pts_interval(verdict.top1_delta_ci)}",
            f"  Top-3 flips: "
            f"{_flip_text(verdict.top3_flipped_to_miss, verdict.top3_flipped_to_hit)}; "
            f"change 95% CI {pts_interval(verdict.top3_delta_ci)}",
        ]
        if verdict.latency_regression and verdict.latency_p95_ratio is not None:
            lines.append(f"  Latency p95: {change(verdict.latency_p95_ratio)} (latency regression)")
        if verdict.reasons:
            lines.append(f"  Regressed: {'; '.join(verdict.reasons)}")
    else:
        lines.append(f"  {verdict.summary}")
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

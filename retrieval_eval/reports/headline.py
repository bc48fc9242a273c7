"""The headline: what a pull request comment or a CI job summary shows.

The verdict badge, the rates at every gated depth (top-1 and top-3 by default) with their 95 %
intervals and deltas, the flipped questions, errors and latency; as Markdown, plain lines, one line, or a small JSON object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.evaluation.results import TOP_K, RunResult, as_pair, extra_depths
from retrieval_eval.formats.markdown_text import md_text
from retrieval_eval.formats.numbers import MISSING, ci, ms, p_value, pct, pts, pts_interval
from retrieval_eval.reports.verdict import (
    depth_label,
    regression_reasons,
    too_small_to_judge,
    verdict_summary,
    warning_reasons,
)

if TYPE_CHECKING:
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.verdicts.models import DepthChange, Verdict

BADGES = {
    "no_regression": "✅ no regression",
    "regression": "❌ regression",
    "invalid_run": "⚠️ invalid run",
    "baseline": "🆕 baseline",
    "not_comparable": "➖ not comparable",
}
NO_VERDICT = "➖ no verdict"
_COMPARED = ("regression", "no_regression")


def badge(verdict: Verdict | None) -> str:
    return NO_VERDICT if verdict is None else BADGES[verdict.state]


def _flips(verdict: Verdict) -> str:
    """The flips at every gated depth; McNemar's p for the shallowest and for each depth beyond
    the seed's top-3 (the verdict block has every depth's)."""
    parts = []
    for i, (depth, change) in enumerate(verdict.changes().items()):
        if not change.compared:
            continue
        misses, gains = len(change.flipped_to_miss), len(change.flipped_to_hit)
        p = f"; McNemar exact p = {p_value(change.p_value)}" if i == 0 or depth > TOP_K else ""
        parts.append(
            f"{misses + gains} at {depth_label(depth)} ({misses} hit→miss, {gains} miss→hit{p})"
        )
    return ", ".join(parts)


def _change(verdict: Verdict | None, depth: int) -> DepthChange | None:
    """The compared change at ``depth``, None when the run was not compared there."""
    if verdict is None or verdict.state not in _COMPARED:
        return None
    change = verdict.changes().get(depth)
    return change if change is not None and change.compared else None


def headline_rows(result: RunResult, verdict: Verdict | None) -> list[list[str]]:
    """Every gated depth (top-1 and top-3 by default): label, rate (hits/n), 95% CI, delta vs
    baseline, its paired 95% CI.

    With stale labels left out of the comparison the delta is over fewer questions than the
    rate beside it, so its cell names the rates it is the difference of:
    ``+2.8 pts (61.1% → 63.9% on the 36 questions compared)``.
    """
    rows = []
    for depth in result.depths:
        change = _change(verdict, depth)
        delta = pts(change.delta if change else None)
        judged = judged_rates(verdict, f"top{depth}")
        rows.append(
            [
                depth_label(depth),
                f"{pct(result.hit_rate(depth))} ({result.hits(depth)}/{result.question_count})",
                ci(result.hit_rate_ci(depth)),
                delta if judged is None else f"{delta} ({judged})",
                pts_interval(change.delta_ci if change else None),
            ]
        )
    return rows


def compared_count(verdict: Verdict | None) -> int | None:
    """How many questions the verdict compared when stale labels were left out, else None."""
    return None if verdict is None else verdict.compared_questions


def judged_rates(verdict: Verdict | None, key: str) -> str | None:
    """``61.1% → 63.9% on the 36 questions compared``: the baseline and current rates the
    delta is the difference of (``key``: ``top1``, ``top5``, ...), when stale labels made them
    differ from the overall rates."""
    n = compared_count(verdict)
    if n is None or verdict is None:
        return None
    change = verdict.changes().get(int(key.removeprefix("top")))
    if change is not None:
        before, now = change.baseline, change.current
    else:
        before, now = getattr(verdict, f"{key}_baseline"), getattr(verdict, f"{key}_current")
    return f"{pct(before)} → {pct(now)} on the {n} question{'s' if n != 1 else ''} compared"


def labels_line(result: RunResult, verdict: Verdict | None) -> str | None:
    """``labels need attention: 5 ids no longer in the index, 10 questions left out of the
    comparison`` when the run has dead labels, else None. The stale questions are the verdict's
    when it compared (stale in this run or the baseline), else this run's own."""
    labels = result.dead_labels
    dead = list(verdict.dead_ids) if verdict is not None and verdict.dead_ids else []
    dead = dead or (list(labels.dead_ids) if labels is not None else [])
    if not dead:
        return None
    if verdict is not None and verdict.state in _COMPARED:
        stale, how = verdict.stale_questions, "left out of the comparison"
    else:
        stale = labels.stale_questions if labels is not None else verdict.stale_questions  # type: ignore[union-attr]
        how = "with every target gone (not compared)"
    return (
        f"labels need attention: {len(dead)} id{'s' if len(dead) != 1 else ''} no longer in "
        f"the index, {len(stale)} question{'s' if len(stale) != 1 else ''} {how}"
    )


REFUSED = "not accepted as the baseline: its index lost labelled documents"


def refused_line(verdict: Verdict | None, *, always: bool = False) -> str | None:
    """What a run refused as a baseline (``dead_labels_baseline: refuse``) says in a headline;
    None otherwise, and for a run not compared unless ``always`` (its summary says it)."""
    if verdict is None or not verdict.baseline_refused:
        return None
    if not always and verdict.state not in _COMPARED:
        return None
    return f"{REFUSED}; the previous baseline stays until `retrieval-eval runs accept`"


def where_line(result: RunResult, verdict: Verdict | None, run_id: object) -> str:
    where = f"{result.set_identifier} × {result.retriever}"
    if run_id is not None:
        where += f", run {run_id}"
    # an invalid run is never compared (older stored ones may still carry an id)
    compared = verdict is not None and verdict.state != "invalid_run"
    if compared and verdict is not None and verdict.baseline_run_id is not None:
        where += f" vs baseline run {verdict.baseline_run_id}"
    return where


def outcome_lines(result: RunResult, verdict: Verdict | None) -> list[str]:
    """What happened besides the rates: flips (compared runs) or the verdict's sentence, what
    regressed, errors and latency."""
    lines = []
    if verdict is not None and verdict.state in _COMPARED:
        lines.append(f"Flipped questions: {_flips(verdict)}")
        reasons, warnings = regression_reasons(verdict), warning_reasons(verdict)
        if reasons:
            lines.append(f"Regressed: {'; '.join(reasons)}")
        if warnings:
            lines.append(f"Warned (not a regression): {'; '.join(warnings)}")
        small = too_small_to_judge(verdict)
        if small:
            lines.append(small)
    elif verdict is not None:
        lines.append(verdict_summary(verdict))
    status = "valid" if result.valid else "INVALID"
    lines.append(
        f"Errors: {result.error_count}/{result.question_count} ({status} run); "
        f"latency p50 {ms(result.latency_ms.p50)}, p95 {ms(result.latency_ms.p95)}"
    )
    return lines


def headline_markdown(
    result: RunResult, verdict: Verdict | None = None, run_id: object = None
) -> str:
    """The Markdown headline: badge, rates with intervals and deltas, flips, errors."""
    lines = [
        f"**{badge(verdict)}** · {md_text(where_line(result, verdict, run_id))}",
        "",
        *_labels_markdown(result, verdict),
        "| | hit rate | 95% CI | Δ vs baseline | 95% CI of Δ (paired) |",
        "|---|---:|---:|---:|---:|",
        *(f"| {' | '.join(row)} |" for row in headline_rows(result, verdict)),
        "",
    ]
    for line in outcome_lines(result, verdict):
        lines += [md_text(line), ""]
    return "\n".join(lines)


def _labels_markdown(result: RunResult, verdict: Verdict | None) -> list[str]:
    line = labels_line(result, verdict)
    refused = refused_line(verdict)
    shown = [] if line is None else [f"⚠️ **{md_text(line)}**", ""]
    return shown + ([] if refused is None else [f"⚠️ {md_text(refused)}", ""])


def headline_text(result: RunResult, verdict: Verdict | None = None, run_id: object = None) -> str:
    """The headline as plain lines, for a terminal or a CI log."""
    state = "NO VERDICT" if verdict is None else verdict.state.upper().replace("_", " ")
    lines = [f"{state}  {where_line(result, verdict, run_id)}"]
    labels = labels_line(result, verdict)
    if labels is not None:
        lines.append(labels[0].upper() + labels[1:])
    refused = refused_line(verdict)
    if refused is not None:
        lines.append(refused[0].upper() + refused[1:])
    for (label, rate, interval, _, delta_ci), depth in zip(
        headline_rows(result, verdict), result.depths, strict=True
    ):
        line = f"{label.capitalize()}: {rate} 95% CI {interval}"
        change = _change(verdict, depth)
        delta = pts(change.delta) if change is not None else MISSING
        judged = judged_rates(verdict, f"top{depth}")
        if judged is not None:
            line += f"; {judged}: Δ {delta} vs baseline, paired 95% CI {delta_ci}"
        elif delta != MISSING:
            line += f"; Δ {delta} vs baseline, paired 95% CI {delta_ci}"
        lines.append(line)
    lines += outcome_lines(result, verdict)
    return "\n".join(lines) + "\n"


def headline_line(result: RunResult, verdict: Verdict | None = None, run_id: object = None) -> str:
    """The headline in one line, for a terminal when the report went to a file (``--output``):
    state, what was run, the rate at every gated depth with its interval (and delta when
    compared), errors."""
    state = "NO VERDICT" if verdict is None else verdict.state.upper().replace("_", " ")
    rates = []
    for label, rate, interval, delta, _delta_ci in headline_rows(result, verdict):
        rates.append(f"{label} {rate} {interval}" + (f" Δ {delta}" if delta != MISSING else ""))
    errors = f"errors {result.error_count}/{result.question_count}"
    labels = labels_line(result, verdict)
    errors += "" if labels is None else f"; {labels}"
    refused = refused_line(verdict, always=True)
    errors += "" if refused is None else f"; {REFUSED}"
    return f"{state}  {where_line(result, verdict, run_id)}: {', '.join(rates)}; {errors}"


def headline_document(
    result: RunResult, verdict: Verdict | None = None, extra: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The headline as a small JSON object (``--summary --format json``). ``depths`` lists the
    gated depths; each one beyond top-1 and top-3 adds its ``top{k}_`` keys (rate, interval,
    delta, its interval, compared rates) and its two flip counts."""
    compared = verdict is not None and verdict.state in _COMPARED
    deeper = extra_depths(result.depths)
    document: dict[str, Any] = {
        "set": result.set_identifier,
        "retriever": result.retriever,
        "run_id": (extra or {}).get("run_id"),
        "state": None if verdict is None else verdict.state,
        "is_regression": verdict is not None and verdict.is_regression,
        "valid": result.valid,
        "question_count": result.question_count,
        "error_count": result.error_count,
        "top1_hit_rate": result.top1_hit_rate,
        "top1_hit_rate_ci": as_pair(result.top1_hit_rate_ci),
        "top3_hit_rate": result.top3_hit_rate,
        "top3_hit_rate_ci": as_pair(result.top3_hit_rate_ci),
        "depths": list(result.depths),
        **{f"top{d}_hit_rate": result.hit_rate(d) for d in deeper},
        **{f"top{d}_hit_rate_ci": as_pair(result.hit_rate_ci(d)) for d in deeper},
        "baseline_run_id": None if verdict is None else verdict.baseline_run_id,
        "top1_delta": None,
        "top1_delta_ci": None,
        "top3_delta": None,
        "top3_delta_ci": None,
        **{f"top{d}_{key}": None for d in deeper for key in ("delta", "delta_ci")},
        "flips": None,
        "p_value": None,
        "reasons": [] if verdict is None else regression_reasons(verdict),
        "warnings": [] if verdict is None else warning_reasons(verdict),
        "summary": "" if verdict is None else verdict_summary(verdict),
        # the deltas are over these questions and rates (fewer than all when labels went stale)
        "compared_questions": None,
        "top1_baseline": None,
        "top1_current": None,
        "top3_baseline": None,
        "top3_current": None,
        **{f"top{d}_{key}": None for d in deeper for key in ("baseline", "current")},
        "labels": labels_line(result, verdict),
        "baseline_refused": verdict is not None and verdict.baseline_refused,
        "dead_ids": _dead_ids(result, verdict),
        "stale_questions": None if verdict is None else list(verdict.stale_questions),
    }
    if compared and verdict is not None:
        document.update(
            top1_delta=verdict.top1_delta,
            top1_delta_ci=as_pair(verdict.top1_delta_ci),
            top3_delta=verdict.top3_delta,
            top3_delta_ci=as_pair(verdict.top3_delta_ci),
            flips={
                "top1_to_miss": len(verdict.flipped_to_miss),
                "top1_to_hit": len(verdict.flipped_to_hit),
                "top3_to_miss": len(verdict.top3_flipped_to_miss),
                "top3_to_hit": len(verdict.top3_flipped_to_hit),
            },
            p_value=verdict.p_value,
            compared_questions=compared_count(verdict) or sum(1 for _ in result.questions),
            top1_baseline=verdict.top1_baseline,
            top1_current=verdict.top1_current,
            top3_baseline=verdict.top3_baseline,
            top3_current=verdict.top3_current,
        )
        for depth in deeper:
            change = _change(verdict, depth)
            if change is None:
                continue
            document[f"top{depth}_delta"] = change.delta
            document[f"top{depth}_delta_ci"] = as_pair(change.delta_ci)
            document[f"top{depth}_baseline"] = change.baseline
            document[f"top{depth}_current"] = change.current
            document["flips"][f"top{depth}_to_miss"] = len(change.flipped_to_miss)
            document["flips"][f"top{depth}_to_hit"] = len(change.flipped_to_hit)
    return document


def _dead_ids(result: RunResult, verdict: Verdict | None) -> list[str]:
    if verdict is not None and verdict.dead_ids:
        return list(verdict.dead_ids)
    return list(result.dead_labels.dead_ids) if result.dead_labels is not None else []


def _power_line(
    power: PowerReport | None, *, markdown: bool = False, source: str | None = None
) -> str:
    if power is None:
        return ""
    from retrieval_eval.lint.render import power_summary

    line = power_summary(power, source)
    return f"\n{md_text(line)}\n" if markdown else f"{line}\n"

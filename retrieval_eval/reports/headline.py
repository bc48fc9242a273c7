"""The headline: what a pull request comment or a CI job summary shows.

The verdict badge, the top-1/top-3 rates with their 95 % intervals and deltas, the flipped
questions, errors and latency; as Markdown, plain lines, one line, or a small JSON object.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.evaluation.results import RunResult, as_pair
from retrieval_eval.reports.markdown_text import md_text
from retrieval_eval.reports.numbers import MISSING, ci, ms, p_value, pct, pts, pts_interval

if TYPE_CHECKING:
    from retrieval_eval.judging.regression import Verdict
    from retrieval_eval.lint.models import PowerReport

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
    top1 = len(verdict.flipped_to_miss) + len(verdict.flipped_to_hit)
    top3 = len(verdict.top3_flipped_to_miss) + len(verdict.top3_flipped_to_hit)
    return (
        f"{top1} at top-1 ({len(verdict.flipped_to_miss)} hit→miss, "
        f"{len(verdict.flipped_to_hit)} miss→hit; McNemar exact p = {p_value(verdict.p_value)}), "
        f"{top3} at top-3 ({len(verdict.top3_flipped_to_miss)} hit→miss, "
        f"{len(verdict.top3_flipped_to_hit)} miss→hit)"
    )


def headline_rows(result: RunResult, verdict: Verdict | None) -> list[list[str]]:
    """Top-1 and top-3: label, rate (hits/n), 95% CI, delta vs baseline, its paired 95% CI.

    With stale labels left out of the comparison the delta is over fewer questions than the
    rate beside it, so its cell names the rates it is the difference of:
    ``+2.8 pts (61.1% → 63.9% on the 36 questions compared)``.
    """
    compared = verdict if verdict is not None and verdict.state in _COMPARED else None
    rows = []
    for label, key in (("top-1", "top1"), ("top-3", "top3")):
        rate, hits = getattr(result, f"{key}_hit_rate"), getattr(result, f"{key}_hits")
        delta = pts(getattr(compared, f"{key}_delta", None))
        judged = judged_rates(verdict, key)
        rows.append(
            [
                label,
                f"{pct(rate)} ({hits}/{result.question_count})",
                ci(getattr(result, f"{key}_hit_rate_ci")),
                delta if judged is None else f"{delta} ({judged})",
                pts_interval(getattr(compared, f"{key}_delta_ci", None)),
            ]
        )
    return rows


def compared_count(verdict: Verdict | None) -> int | None:
    """How many questions the verdict compared when stale labels were left out, else None."""
    return None if verdict is None else verdict.compared_questions


def judged_rates(verdict: Verdict | None, key: str) -> str | None:
    """``61.1% → 63.9% on the 36 questions compared``: the baseline and current rates the
    delta is the difference of, when stale labels made them differ from the overall rates."""
    n = compared_count(verdict)
    if n is None or verdict is None:
        return None
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
    return f"{REFUSED}; the previous baseline stays until `retrieval-eval baseline accept`"


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
        if verdict.reasons:
            lines.append(f"Regressed: {'; '.join(verdict.reasons)}")
    elif verdict is not None:
        lines.append(verdict.summary)
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
    for (label, rate, interval, _, delta_ci), key in zip(
        headline_rows(result, verdict), ("top1", "top3"), strict=True
    ):
        line = f"{label.capitalize()}: {rate} 95% CI {interval}"
        delta = pts(getattr(verdict, f"{key}_delta", None)) if _compared(verdict) else MISSING
        judged = judged_rates(verdict, key)
        if judged is not None:
            line += f"; {judged}: Δ {delta} vs baseline, paired 95% CI {delta_ci}"
        elif delta != MISSING:
            line += f"; Δ {delta} vs baseline, paired 95% CI {delta_ci}"
        lines.append(line)
    lines += outcome_lines(result, verdict)
    return "\n".join(lines) + "\n"


def headline_line(result: RunResult, verdict: Verdict | None = None, run_id: object = None) -> str:
    """The headline in one line, for a terminal when the report went to a file (``--output``):
    state, what was run, top-1 and top-3 with their intervals (and deltas when compared),
    errors."""
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
    """The headline as a small JSON object (``--summary --format json``)."""
    compared = verdict is not None and verdict.state in _COMPARED
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
        "baseline_run_id": None if verdict is None else verdict.baseline_run_id,
        "top1_delta": None,
        "top1_delta_ci": None,
        "top3_delta": None,
        "top3_delta_ci": None,
        "flips": None,
        "p_value": None,
        "reasons": [] if verdict is None else list(verdict.reasons),
        "summary": "" if verdict is None else verdict.summary,
        # the deltas are over these questions and rates (fewer than all when labels went stale)
        "compared_questions": None,
        "top1_baseline": None,
        "top1_current": None,
        "top3_baseline": None,
        "top3_current": None,
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
    return document


def _compared(verdict: Verdict | None) -> bool:
    return verdict is not None and verdict.state in _COMPARED


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

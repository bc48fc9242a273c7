"""A lint report as text, Markdown or JSON.

Text and Markdown list the findings errors first, then the power figures next to the
thresholds they are compared with. Stored and user strings (question ids, texts) are printed
as they are: no markup is interpreted (the text format uses no rich); in Markdown they go
through :func:`retrieval_eval.formats.markdown_text.md_text`, so they are shown, never rendered.
"""

from __future__ import annotations

from retrieval_eval.formats.jsonio import dumps
from retrieval_eval.formats.markdown_text import md_text
from retrieval_eval.formats.numbers import pct, points
from retrieval_eval.lint.models import SEVERITIES, Finding, LintReport, PowerFigure, PowerReport

_ORDER = {severity: rank for rank, severity in enumerate(SEVERITIES)}


def _sorted(report: LintReport) -> list[Finding]:
    return sorted(report.findings, key=lambda f: (_ORDER[f.severity], f.check))


def headline(report: LintReport) -> str:
    counts = ", ".join(
        f"{report.count(s)} {s}{'s' if report.count(s) != 1 else ''}" for s in SEVERITIES
    )
    return f"lint {report.set_id}: {report.questions} questions; {counts}"


def pts(value: float | None) -> str:
    """A threshold or detectable drop; ``none`` when no drop up to the whole rate is detectable."""
    return "none" if value is None else points(value)


def _rate(value: float | None) -> str:
    return pct(value, digits=0)


def power_method(power: PowerReport) -> str:
    return (
        f"McNemar (paired), alpha {power.alpha} two-sided, power {power.power}, "
        f"churn {_churn(power)}; rates: {power.rates_from}"
    )


def _churn(power: PowerReport) -> str:
    """The churn the figures used: measured at each depth (over stored runs), else assumed."""
    if not power.churn_at:
        return f"{power.churn} (assumed: no two stored runs to measure it)"
    measured = ", ".join(f"top-{d} {c:.3f}" for d, c in sorted(power.churn_at.items()))
    return f"{measured} ({power.churn_from})"


def what_is_seen(figure: PowerFigure, unit: str = "pts") -> str:
    """What a set of this size lets the verdict see, in words: ``at 46 questions a drop needs
    ≥ 23.2 pts to be seen; 155 questions to see 10 pts``; ``at 300 questions a drop of 6.6 pts
    or more is seen (ok)`` when the threshold is seen; ``at 16 questions no drop is seen, not
    even one to 0%`` when even losing every hit would not be. The run report, the dashboard,
    ``show`` and lint's warning all say it so."""
    n, drop = figure.questions, figure.detectable_drop
    if drop is not None and not figure.threshold_too_small:
        return f"at {n} questions a drop of {points(drop, unit)} or more is seen (ok)"
    seen = (
        f"at {n} questions no drop is seen, not even one to 0%"
        if drop is None
        else f"at {n} questions a drop needs ≥ {points(drop, unit)} to be seen"
    )
    threshold = f"{figure.threshold * 100:g} {unit}"
    needed = (
        f"{figure.questions_needed} questions to see {threshold}"
        if figure.questions_needed is not None
        else f"no set size sees {threshold}"
    )
    return f"{seen}; {needed}"


def figure_line(figure: PowerFigure) -> str:
    """One metric's power next to its threshold: ``top-1 (threshold 10.0 pts): at 46 questions
    a drop needs ≥ 23.2 pts to be seen; 155 questions to see 10 pts`` (:func:`what_is_seen`)."""
    label = figure.metric.replace("top", "top-")
    return f"{label} (threshold {pts(figure.threshold)}): {what_is_seen(figure)}"


def power_summary(power: PowerReport, thresholds_from: str | None = None) -> str:
    """One line for the run report: each overall figure next to its threshold; with
    ``thresholds_from``, where those thresholds came from (``show`` of a stored run)."""
    overall = [f for f in power.figures if f.scope == "overall"]
    source = "" if thresholds_from is None else f"; thresholds: {thresholds_from}"
    return (
        "Power: "
        + "; ".join(figure_line(f) for f in overall)
        + f" (McNemar, alpha {power.alpha}, power {power.power}, churn {power.churn}{source})"
    )


def render_text(report: LintReport) -> str:
    lines = [headline(report), f"checks run: {', '.join(report.checks_run) or 'none'}"]
    lines += [f"skipped {check}: {reason}" for check, reason in report.checks_skipped.items()]
    lines.append("")
    for finding in _sorted(report):
        ids = ", ".join(finding.question_ids)
        lines.append(
            f"{finding.severity.upper():7} {finding.check}"
            + (f" [{ids}]" if ids else "")
            + f": {finding.message}"
        )
    if report.power is not None:
        lines += ["", f"power ({power_method(report.power)}):"]
        for figure in report.power.figures:
            lines.append(
                f"  {figure.scope:34} {figure.metric} n={figure.questions:<5} rate "
                f"{_rate(figure.rate):>4}  threshold {pts(figure.threshold):>9}  detectable "
                f"{pts(figure.detectable_drop):>9}  needed {figure.questions_needed}"
            )
    return "\n".join(lines) + "\n"


def render_markdown(report: LintReport) -> str:
    lines = [f"## {md_text(headline(report))}", ""]
    lines.append(f"Checks run: {md_text(', '.join(report.checks_run) or 'none')}.")
    for check, reason in report.checks_skipped.items():
        lines.append(f"Skipped **{md_text(check)}**: {md_text(reason)}.")
    if report.findings:
        lines += [
            "",
            "| severity | check | questions | documents | finding |",
            "|---|---|---|---|---|",
        ]
        for f in _sorted(report):
            lines.append(
                f"| {f.severity} | {md_text(f.check)} | {md_text(', '.join(f.question_ids))} | "
                f"{md_text(', '.join(f.doc_ids))} | {md_text(f.message)} |"
            )
    if report.power is not None:
        lines += [
            "",
            f"Power: {md_text(power_method(report.power))}.",
            "",
            "| scope | metric | questions | rate | threshold | detectable drop | questions needed |",
            "|---|---|---|---|---|---|---|",
        ]
        for g in report.power.figures:
            lines.append(
                f"| {md_text(g.scope)} | {g.metric} | {g.questions} | {_rate(g.rate)} | "
                f"{pts(g.threshold)} | {pts(g.detectable_drop)} | {g.questions_needed} |"
            )
    return "\n".join(lines) + "\n"


def render_json(report: LintReport) -> str:
    return dumps(report.model_dump(mode="json")) + "\n"


RENDERERS = {"text": render_text, "markdown": render_markdown, "json": render_json}

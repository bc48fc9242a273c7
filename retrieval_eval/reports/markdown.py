"""The Markdown report: the headline, then the tables folded into ``<details>`` blocks."""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.formats.markdown_text import md_fence, md_row
from retrieval_eval.formats.numbers import decimal
from retrieval_eval.reports.cells import (
    CI_NOTE,
    depth_headers,
    metric_ci,
    question_cells,
    slice_cells,
)
from retrieval_eval.reports.headline import _power_line, headline_markdown
from retrieval_eval.reports.machine import judge_figures_markdown

if TYPE_CHECKING:
    from retrieval_eval.labels.machine import JudgeFigures
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.verdicts.models import Verdict


def _folded(summary: str, body: list[str]) -> list[str]:
    """A collapsed block; the blank lines let GitHub render the Markdown inside it."""
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


QUESTION_HEAD = ("id", "form", "hard class")
QUESTION_TAIL = ("rank", "latency", "error")


def _header(names: list[str]) -> str:
    """A table's header row (names of our own: nothing to escape)."""
    return f"| {' | '.join(names)} |"


def render_markdown(
    result: RunResult,
    verdict: Verdict | None = None,
    run_id: object = None,
    power: PowerReport | None = None,
    power_source: str | None = None,
    judge_figures: JudgeFigures | None = None,
) -> str:
    """The headline (with the power line), then folded: the figures beside model judgments
    (:mod:`retrieval_eval.reports.machine`, only with ``judge_figures``), the slices, metrics,
    questions and the verdict's details."""
    # the power line belongs with the headline: a pull-request reader sees it without unfolding
    power_line = _power_line(power, markdown=True, source=power_source)
    lines = [headline_markdown(result, verdict, run_id) + power_line]
    judged = judge_figures_markdown(judge_figures)
    if judged is not None:
        lines += _folded(*judged)
    depths = result.depths
    for title, column, slices in (
        ("By form", "form", result.by_form),
        ("By hard class", "hard class", result.by_hard_class),
    ):
        if not slices:
            continue
        table = [
            _header([column, "questions", *depth_headers(depths)]),
            "|---|---:|" + "---:|---:|" * len(depths),
        ]
        table += [md_row(slice_cells(v, s, depths)) for v, s in slices.items()]
        lines += _folded(title, table)
    if result.metrics:
        intervals, shown = result.metrics_ci, result.settings.shown_metric
        table = ["| metric | value | 95% CI |", "|---|---:|---:|"]
        table += [
            f"| {shown(name)} | {decimal(value)} | {metric_ci(name, intervals)} |"
            for name, value in result.metrics.items()
        ]
        lines += _folded("Metrics", [*table, "", CI_NOTE])
    table = [
        _header([*QUESTION_HEAD, *depth_headers(depths, interval=False), *QUESTION_TAIL]),
        "|---|---|---|" + "---|" * len(depths) + "---:|---:|---|",
    ]
    stale = result.stale_targets()
    table += [md_row(question_cells(q, stale.get(q.id), depths)) for q in result.questions]
    lines += _folded(f"Per question ({result.question_count})", table)
    if verdict is not None:
        from retrieval_eval.reports.verdict import render_verdict

        lines += _folded("Verdict details", md_fence(render_verdict(verdict).rstrip("\n")))
    return "\n".join(lines)

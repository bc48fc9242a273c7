"""A run's report in one of its formats: text (rich tables), Markdown, the JSON contract or CSV.

Every rate comes with its 95 % Wilson interval (:mod:`retrieval_eval.evaluation.intervals`); a
verdict's deltas with their paired interval. Markdown starts with the headline
(:mod:`retrieval_eval.reports.headline`) and folds the tables into ``<details>`` blocks;
``summary=True`` renders the headline alone in any format.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.formats.jsonio import dumps
from retrieval_eval.reports.csv import render_csv
from retrieval_eval.reports.headline import (
    _power_line,
    headline_document,
    headline_markdown,
    headline_text,
)
from retrieval_eval.reports.json import render_json
from retrieval_eval.reports.markdown import render_markdown
from retrieval_eval.reports.text import render_text

if TYPE_CHECKING:
    from retrieval_eval.labels.machine import JudgeFigures
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.verdicts.models import Verdict

FORMATS = ("text", "json", "markdown", "csv")


def render(
    result: RunResult,
    fmt: str,
    extra: dict[str, Any] | None = None,
    *,
    verdict: Verdict | None = None,
    summary: bool = False,
    power: PowerReport | None = None,
    power_source: str | None = None,
    judge_figures: JudgeFigures | None = None,
) -> str:
    """The report in ``fmt``; with ``verdict`` the verdict is part of it (text: the block after
    the report; Markdown: the badge and deltas in the headline, the details folded; JSON: the
    caller puts :func:`~retrieval_eval.reports.verdict.verdict_document` in ``extra``). ``summary=True``: the headline alone
    (JSON: :func:`headline_document`); CSV has no summary. ``power``
    (:func:`retrieval_eval.lint.power.run_power`): the smallest drop this set size detects,
    next to the thresholds (text: a last line; Markdown: under the headline, before the folded
    tables; JSON: ``power``), not in a summary; ``power_source``: where its thresholds came from
    (``show``: a config file or the defaults), said on that line (JSON: ``power_thresholds_from``).
    ``judge_figures`` (:mod:`retrieval_eval.labels.machine`, only when the set has model
    judgments): holes by who judged and the hit rate three ways (text: lines after the power
    line; Markdown: a block folded under the headline; JSON: ``judge_figures``); absent, the
    report is as without model judges."""
    run_id = (extra or {}).get("run_id")
    if fmt == "csv":
        if summary:
            raise ValueError("the CSV report has no summary")
        return render_csv(result)
    if fmt == "json":
        if summary:
            return dumps(headline_document(result, verdict, extra)) + "\n"
        if power is not None:
            extra = {**(extra or {}), "power": power.model_dump(mode="json")}
            if power_source is not None:
                extra["power_thresholds_from"] = power_source
        if judge_figures is not None:
            extra = {**(extra or {}), "judge_figures": judge_figures.contract()}
        return render_json(result, extra)
    if fmt == "markdown":
        if summary:
            return headline_markdown(result, verdict, run_id)
        return render_markdown(result, verdict, run_id, power, power_source, judge_figures)
    if summary:
        return headline_text(result, verdict, run_id)
    text = render_text(result)
    if verdict is not None:
        from retrieval_eval.reports.verdict import render_verdict

        text += "\n" + render_verdict(verdict)
    from retrieval_eval.reports.machine import judge_figures_text

    return text + _power_line(power, source=power_source) + judge_figures_text(judge_figures)

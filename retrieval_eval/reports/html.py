"""One stored run as ONE self-contained HTML file (``retrieval-eval runs report RUN_ID -o FILE``).

Nothing is fetched when the file is opened: the CSS is inline, the chart is inline SVG, there is
no script, and a Content-Security-Policy (``default-src 'none'``) makes any slip visible in the
browser instead of a silent request. The page is built with the standard library, not Jinja2:
Jinja2 comes only with the ``airflow`` extra and a report must work in a base install. Every
piece of text from the run (ids, questions, class names, errors, names) goes through
:func:`html.escape` in :func:`_e`, the one way text enters the page.

The content is the Markdown report's: the headline (verdict, the rate at every gated depth with
its 95 % interval, deltas with their paired interval, flips), a chart of the hit rates by form
and hard class with their intervals as whiskers, and the tables folded in ``<details>``.

It reads on a phone: the page never scrolls sideways (a table wider than the screen scrolls
inside its own wrapper, long words break), and below 600 px the chart is swapped (CSS only) for
a narrow copy with each label above its bar, drawn at its own size rather than shrunk to half.
"""

from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING

from retrieval_eval.formats.numbers import MISSING, ci, decimal, pct
from retrieval_eval.reports.cells import (
    CI_NOTE,
    depth_headers,
    metric_ci,
    question_cells,
    slice_cells,
)
from retrieval_eval.reports.headline import (
    badge,
    headline_rows,
    labels_line,
    outcome_lines,
    where_line,
)
from retrieval_eval.reports.machine import CAVEAT, holes_sentence, run_table

if TYPE_CHECKING:
    from retrieval_eval.evaluation.intervals import Interval
    from retrieval_eval.evaluation.results import RunResult, SliceRates
    from retrieval_eval.labels.machine import JudgeFigures
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.store.models import StoredRun
    from retrieval_eval.verdicts.models import Verdict

_CSS = """
:root { --fg: #1f2328; --muted: #59636e; --line: #d1d9e0; --bar: #0072B2; --bar3: #E69F00;
  --bar5: #009E73; --bar6: #CC79A7; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--fg);
  max-width: 1100px; margin: 2rem auto; padding: 0 1rem; }
h1 { font-size: 1.4rem; margin: 0 0 .25rem; }
.badge { display: inline-block; font-weight: 600; padding: .15rem .6rem; border-radius: 1rem;
  background: #eef1f4; margin-right: .5rem; }
.badge.regression, .badge.invalid_run { background: #ffebe9; color: #a40e26; }
.badge.no_regression { background: #dafbe1; color: #116329; }
.badge.baseline { background: #ddf4ff; color: #0550ae; }
.muted { color: var(--muted); }
table { border-collapse: collapse; margin: .5rem 0 1rem; }
th, td { border: 1px solid var(--line); padding: .25rem .55rem; text-align: left;
  vertical-align: top; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.wrap { overflow-wrap: anywhere; max-width: 28rem; }
details { margin: .4rem 0; }
summary { cursor: pointer; font-weight: 600; padding: .2rem 0; }
pre { background: #f6f8fa; padding: .75rem; overflow-x: auto; }
svg text { font: 11px system-ui, sans-serif; fill: var(--fg); }
/* a phone: the chart shrinks to the page (its viewBox keeps the proportions), each table
   scrolls sideways inside its own wrapper, long words break: the page never scrolls sideways */
svg { max-width: 100%; height: auto; display: block; }
.scroll { overflow-x: auto; max-width: 100%; }
p, summary, h1 { overflow-wrap: anywhere; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; }
.chart-narrow { display: none; }
@media (max-width: 600px) { body { margin: 1rem auto; padding: 0 .6rem; }
  .chart-wide { display: none; } .chart-narrow { display: block; } }
"""

_ROW_H = 22  # chart row height
_LABEL_W = 190  # chart label column
_PLOT_W = 420  # chart plot width (0-100 %)
_NARROW_PLOT_W = 296  # the phone copy's plot width: the whole chart is 345 px


def _e(value: object) -> str:
    """Text as HTML: the only way run data enters the page."""
    return escape(str(value), quote=True)


def _cells(values: list[str], numeric: set[int] | None = None, tag: str = "td") -> str:
    numeric = numeric or set()
    opening = {False: f"<{tag}>", True: f'<{tag} class="num">'}
    return "".join(f"{opening[i in numeric]}{_e(v)}</{tag}>" for i, v in enumerate(values))


def _table(header: list[str], rows: list[list[str]], numeric: set[int]) -> str:
    body = "".join(f"<tr>{_cells(row, numeric)}</tr>" for row in rows)
    head = _cells(header, numeric, "th")
    # the wrapper scrolls a table wider than the screen, so the page itself never does
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    return f'<div class="scroll">{table}</div>'


def _folded(title: str, body: str, anchor: str | None = None) -> str:
    opening = "<details>" if anchor is None else f'<details id="{_e(anchor)}">'
    return f"{opening}<summary>{_e(title)}</summary>{body}</details>"


def _judge_figures(figures: JudgeFigures | None) -> list[str]:
    """The figures beside model judgments, folded (the Markdown report's block, as HTML)."""
    if figures is None:
        return []
    document = figures.contract()
    headers, rows = run_table(document)
    body = _table(headers, rows, {1, 2, 3}) + f'<p class="muted">{_e(CAVEAT)}</p>'
    return [_folded(holes_sentence(document), body, anchor="judge-figures")]


# a bar colour per gated depth, in order (Okabe-Ito: told apart by colour-blind readers too)
_COLOURS = ("var(--bar)", "var(--bar3)", "var(--bar5)", "var(--bar6)")


def _chart(result: RunResult, narrow: bool = False) -> str:
    """Horizontal bars of the rate at every gated depth (top-1 and top-3 by default), overall
    and per slice, with 95 % Wilson intervals as whiskers (inline SVG, no script).

    ``narrow``: the phone copy (CSS shows one of the two), each label on its own line above its
    bar, 345 px wide, so it is drawn at full size where the wide one would shrink to half."""
    rows: list[tuple[str, SliceRates | RunResult]] = [("all questions", result)]
    rows += [(f"form: {v}", s) for v, s in result.by_form.items()]
    rows += [(f"class: {v}", s) for v, s in result.by_hard_class.items()]
    x0, plot_w, row_h = (4, _NARROW_PLOT_W, _ROW_H + 14) if narrow else (_LABEL_W, _PLOT_W, _ROW_H)
    depths = result.depths
    height = row_h * (len(depths) * len(rows)) + 30
    width = x0 + plot_w + (45 if narrow else 120)
    css = "chart-narrow" if narrow else "chart-wide"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="{css}" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        'aria-label="hit rates with 95% intervals">'
    ]
    for tick in range(0, 101, 25):
        x = x0 + plot_w * tick / 100
        anchor = "start" if narrow and tick == 0 else "middle"
        parts.append(
            f'<line x1="{x:.1f}" y1="4" x2="{x:.1f}" y2="{height - 22}" stroke="#d1d9e0"/>'
            f'<text x="{x:.1f}" y="{height - 8}" text-anchor="{anchor}">{tick}%</text>'
        )
    y = 6
    for label, s in rows:
        for i, depth in enumerate(depths):
            metric, colour = f"top-{depth}", _COLOURS[i % len(_COLOURS)]
            rate, interval = s.hit_rate(depth), s.hit_rate_ci(depth)
            text = f"{_e(_clip(label))} · {metric}"
            if narrow:
                parts.append(f'<text x="{x0}" y="{y + 11}">{text}</text>')
            else:
                parts.append(f'<text x="{x0 - 8}" y="{y + 14}" text-anchor="end">{text}</text>')
            bar_y = y + row_h - _ROW_H
            parts.append(_bar(x0, plot_w, bar_y, rate, interval, colour, f"{label} {metric}"))
            y += row_h
    parts.append("</svg>")
    return "".join(parts)


def _clip(label: str, limit: int = 30) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "…"


def _bar(
    x0: int,
    plot_w: int,
    y: int,
    rate: float | None,
    interval: Interval | None,
    colour: str,
    name: str,
) -> str:
    if rate is None:
        return f'<text x="{x0 + 4}" y="{y + 14}" class="muted">no questions</text>'
    width = plot_w * rate
    title = f"{name}: {pct(rate)} {ci(interval)}"
    out = (
        f'<g><title>{_e(title)}</title><rect x="{x0}" y="{y + 4}" width="{width:.1f}" '
        f'height="{_ROW_H - 8}" fill="{colour}" opacity="0.8"/>'
    )
    if interval is not None:
        lo, hi = (x0 + plot_w * bound for bound in interval)
        mid = y + _ROW_H / 2
        out += (
            f'<line x1="{lo:.1f}" y1="{mid}" x2="{hi:.1f}" y2="{mid}" stroke="#1f2328"/>'
            f'<line x1="{lo:.1f}" y1="{mid - 5}" x2="{lo:.1f}" y2="{mid + 5}" stroke="#1f2328"/>'
            f'<line x1="{hi:.1f}" y1="{mid - 5}" x2="{hi:.1f}" y2="{mid + 5}" stroke="#1f2328"/>'
        )
    text_x = x0 + plot_w + 6
    return out + f'<text x="{text_x}" y="{y + 14}">{_e(pct(rate))}</text></g>'


def _extra_lines(
    result: RunResult,
    verdict: Verdict | None,
    power: PowerReport | None,
    power_source: str | None,
) -> list[str]:
    """The dead-labels line (as the headline's) and the power line, when there are any."""
    lines = []
    labels = labels_line(result, verdict)
    if labels is not None:
        lines.append(f'<p class="labels">⚠️ {_e(labels)}</p>')
    if power is not None:
        from retrieval_eval.lint.render import power_summary

        lines.append(f'<p class="power">{_e(power_summary(power, power_source))}</p>')
    return lines


def render_html(
    run: StoredRun,
    power: PowerReport | None = None,
    power_source: str | None = None,
    judge_figures: JudgeFigures | None = None,
) -> str:
    """The whole page for a stored run; ``power`` (:func:`retrieval_eval.lint.power.run_power`)
    adds the smallest drop the set detects next to the thresholds, under the headline, with
    where those thresholds came from (``power_source``); ``judge_figures``
    (:func:`retrieval_eval.labels.machine.judge_figures`) the figures beside model judgments."""
    from retrieval_eval.reports.verdict import render_verdict

    result, verdict = run.result, run.verdict
    state = verdict.state if verdict is not None else "none"
    title = f"{result.set_identifier} × {result.retriever} — run {run.id}"
    headline = _table(
        ["", "hit rate", "95% CI", "Δ vs baseline", "95% CI of Δ (paired)"],
        headline_rows(result, verdict),
        {1, 2, 3, 4},
    )
    sections = [
        f'<p><span class="badge {_e(state)}">{_e(badge(verdict))}</span>'
        f"{_e(where_line(result, verdict, run.id))}</p>",
        headline,
        *(f"<p>{_e(line)}</p>" for line in outcome_lines(result, verdict)),
        *_extra_lines(result, verdict, power, power_source),
        *_judge_figures(judge_figures),
        "<h2>Hit rates with 95% intervals</h2>",
        _chart(result),
        _chart(result, narrow=True),
    ]
    depths = result.depths
    for name, column, slices in (
        ("By form", "form", result.by_form),
        ("By hard class", "hard class", result.by_hard_class),
    ):
        if slices:
            rows = [slice_cells(value, s, depths) for value, s in slices.items()]
            header = [column, "questions", *depth_headers(depths)]
            sections.append(_folded(name, _table(header, rows, set(range(1, len(header))))))
    if result.metrics:
        intervals, shown = result.metrics_ci, result.settings.shown_metric
        rows = [
            [shown(name), decimal(value), metric_ci(name, intervals)]
            for name, value in result.metrics.items()
        ]
        body = _table(["metric", "value", "95% CI"], rows, {1, 2})
        sections.append(_folded("Metrics", body + f'<p class="muted">{_e(CI_NOTE)}</p>'))
    stale = result.stale_targets()
    question_rows = [
        [q.id, q.question, *question_cells(q, stale.get(q.id), depths)[1:]]
        for q in result.questions
    ]
    header = [
        *("id", "question", "form", "hard class"),
        *depth_headers(depths, interval=False),
        *("rank", "latency", "error"),
    ]
    rank = 4 + len(depths)  # rank and latency are numbers
    sections.append(
        _folded(
            f"Per question ({result.question_count})",
            _table(header, question_rows, {rank, rank + 1}),
        )
    )
    if verdict is not None:
        sections.append(_folded("Verdict details", f"<pre>{_e(render_verdict(verdict))}</pre>"))
    saved = f"{run.created_at:%Y-%m-%d %H:%M} UTC"
    sections.append(
        f'<p class="muted">Run {run.id} ({_e(run.status)}), saved {saved}; labels '
        f"{_e(result.labels_fingerprint)}; corpus revision {_e(result.corpus_revision or MISSING)}; "
        "written by retrieval-eval.</p>"
    )
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\'; '
        "style-src 'unsafe-inline'; img-src data:\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>"
        f"<h1>{_e(title)}</h1>{''.join(sections)}</body></html>\n"
    )

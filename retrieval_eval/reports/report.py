"""Rendering a run as text (rich tables), Markdown, the JSON contract or CSV.

Every rate comes with its 95 % Wilson interval (:mod:`retrieval_eval.evaluation.intervals`); a verdict's
deltas with their paired interval. Markdown starts with a headline (the verdict badge, the
top-1/top-3 rates and deltas, the flipped questions) fit for a pull request or a CI job
summary, and folds the tables into ``<details>`` blocks; ``summary=True`` renders the headline
alone in any format. rich is imported by the text report only: the other formats, and ``pct``
for other commands, do without it.
"""

from __future__ import annotations

import io
import json
import re
import sys
from typing import TYPE_CHECKING, Any

from retrieval_eval.evaluation.intervals import Interval, ci, pct
from retrieval_eval.evaluation.results import (
    QuestionResult,
    RunResult,
    SliceRates,
    as_pair,
    paused_gc,
)
from retrieval_eval.reports.json_text import indented_json, marked_halves
from retrieval_eval.reports.markdown_text import md_fence, md_row, md_text
from retrieval_eval.reports.question_json import questions_json

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from retrieval_eval.judging.regression import Verdict
    from retrieval_eval.lint.models import PowerReport

FORMATS = ("text", "json", "markdown", "csv")
PIPE_WIDTH = 140  # text report width when stdout is not a terminal (CI logs, files)
ERROR_WIDTH = 60  # error texts wrap within this many characters
_EMOJI_CODE = re.compile(r":\S*?:")  # what rich may read as an emoji code (":smile:")
_MARKUP_TAG = re.compile(r"\[[a-zA-Z#/@]")  # what may open a rich markup tag ("[95%" does not)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def rate_line(
    label: str, rate: float | None, hits: int, count: int, interval: Interval | None = None
) -> str:
    shown = "" if interval is None else f" {ci(interval)}"
    return f"{label}: {pct(rate)}{shown} ({hits}/{count})"


CI_NOTE = (
    "95% CI: Wilson score interval; for hit_rate@k only (recall, MRR and nDCG are means "
    "over questions, not proportions, and have none)."
)


def ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} ms"


def slice_cells(value: str, s: SliceRates) -> list[str]:
    """One slice as report cells: value, questions, top-1 (hits), its CI, top-3 (hits), its CI."""
    return [
        value,
        str(s.questions),
        f"{pct(s.top1_hit_rate)} ({s.top1_hits})",
        ci(s.top1_hit_rate_ci),
        f"{pct(s.top3_hit_rate)} ({s.top3_hits})",
        ci(s.top3_hit_rate_ci),
    ]


def question_cells(q: QuestionResult, dead: list[str] | None = None) -> list[str]:
    """One question as report cells: id, form, hard class, top-1, top-3, rank, latency, error.

    ``dead``: a stale label's dead targets (:meth:`RunResult.stale_targets`); its hit cells read
    ``stale`` and the error cell names the ids, since the question is left out of the verdict.
    """
    stale = dead is not None
    return [
        q.id,
        q.form.value,
        q.hard_class or "",
        "stale" if stale else "hit" if q.top1_hit else "miss",
        "stale" if stale else "hit" if q.top3_hit else "miss",
        "" if q.first_hit_rank is None else str(q.first_hit_rank),
        ms(q.latency_ms),
        f"stale label: {', '.join(dead or [])} no longer in the index" if stale else q.error or "",
    ]


class _Spec:
    """A table's title, columns and rows, as plain data: the text report writes a plain table
    itself (:func:`_plain_lines`) and builds a rich ``Table`` (:meth:`rich`) only for the others,
    so a report of plain tables imports no rich (~25 ms)."""

    def __init__(self, title: str) -> None:
        self.title = title
        self.columns: list[tuple[str, dict[str, Any]]] = []  # header, Table.add_column options
        self.rows: list[list[str]] = []

    def add_column(self, header: str, **options: Any) -> None:
        self.columns.append((header, options))

    def add_row(self, *cells: str) -> None:
        self.rows.append(list(cells))

    def rich(self) -> Table:
        from rich.table import Table

        table = Table(title=self.title, title_justify="left")
        for header, options in self.columns:
            table.add_column(header, **options)
        from rich.text import Text

        for row in self.rows:
            # Text, not str: a stored id such as "[/f]" is data, never rich markup
            table.add_row(*(Text(cell) for cell in row))
        return table


def _slice_table(title: str, slices: dict[str, SliceRates], column: str) -> _Spec:
    table = _Spec(title)
    table.add_column(column, overflow="fold")  # a class name folds: "…" would cut it
    table.add_column("questions", justify="right")
    table.add_column("top-1", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    table.add_column("top-3", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    for value, s in slices.items():
        table.add_row(*slice_cells(value, s))
    return table


def _question_table(result: RunResult) -> _Spec:
    table = _Spec("Per question")
    # ids and classes fold rather than end in "…": a truncated id cannot be looked up
    table.add_column("id", overflow="fold")
    table.add_column("form")
    table.add_column("hard class", overflow="fold")
    table.add_column("top-1")
    table.add_column("top-3")
    table.add_column("rank", justify="right")
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("error", overflow="fold", max_width=ERROR_WIDTH)
    stale = result.stale_targets()
    for q in result.questions:
        table.add_row(*question_cells(q, stale.get(q.id)))
    return table


def _metrics_table(result: RunResult) -> _Spec:
    table = _Spec("Metrics")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    intervals = result.metrics_ci
    for name, value in result.metrics.items():
        table.add_row(name, metric_value(value), metric_ci(name, intervals))
    return table


def _width_bound(table: Table) -> int | None:
    """An upper bound of ``table``'s widest layout, from its cells' text alone (no layout).

    Every column at its longest header or cell, its padding and the box's rules: rich's
    measurement of the table never exceeds it (markup and emoji codes only shorten a cell,
    a column's ``max_width`` only narrows it). None when a cell is not a plain string or holds
    a tab (rich expands tabs), which only rich can measure.
    """
    from rich.cells import cell_len

    _, right, _, left = table.padding
    width = len(table.columns) + 1  # the box's edges and the rules between columns
    for column in table.columns:
        widest = cell_len(str(column.header))
        for cell in column.cells:
            if not isinstance(cell, str) or "\t" in cell:
                return None
            widest = max(widest, cell_len(cell))  # all its lines: a markup tag can join two
        width += widest + left + right
    return width


def _plain_cell(text: object) -> bool:
    """A cell rich prints as it is: printable ASCII (or the reports' "–"), no markup, no emoji
    code, no edge spaces."""
    return (
        isinstance(text, str)
        and (text.isascii() or {c for c in text if not c.isascii()} <= {"–"})
        and text.isprintable()
        and ("[" not in text or _MARKUP_TAG.search(text) is None)
        and text == text.strip()
        and (":" not in text or _EMOJI_CODE.search(text) is None)
    )


def _plain_lines(table: _Spec, width: int | None) -> list[str] | None:
    """``table`` as rich prints it (``table.rich()``) on a ``width``-column console that is no
    terminal, for a table of plain cells (:func:`_plain_cell`) at its natural width; None for
    anything else.

    rich lays out every cell of a table to print it (~80 ms for the 100-row per-question
    table); a table whose every column fits at its longest cell needs none of that: each
    column is as wide as that cell, headers and cells padded by one space, in rich's default
    heavy-head box. ``tests/reports/test_report.py`` compares the two on many tables.
    """
    if not table.rows:
        return None
    known = {"justify", "overflow", "no_wrap", "max_width"}  # overflow, no_wrap: nothing folds
    widths = []
    justify = []
    columns: list[list[str]] = [[] for _ in table.columns]
    for cells_of_row in table.rows:
        if len(cells_of_row) != len(columns):
            return None
        for cells, cell in zip(columns, cells_of_row, strict=True):
            cells.append(cell)
    for (header, options), cells in zip(table.columns, columns, strict=True):
        if not options.keys() <= known or options.get("justify", "left") not in ("left", "right"):
            return None
        if not (_plain_cell(header) and all(_plain_cell(cell) for cell in cells)):
            return None
        widest = max(len(header), *map(len, cells))
        max_width = options.get("max_width")
        if max_width is not None and widest > max_width:
            return None  # rich folds it
        widths.append(widest)
        justify.append(options.get("justify", "left"))
    total = sum(widths) + 3 * len(widths) + 1
    if (width is not None and total > width) or not (
        _plain_cell(table.title) and len(table.title) <= total
    ):
        return None

    def row(cells: list[str], edge: str) -> str:
        padded = (
            cell.rjust(w) if j == "right" else cell.ljust(w)
            for cell, w, j in zip(cells, widths, justify, strict=True)
        )
        return f"{edge} " + f" {edge} ".join(padded) + f" {edge}"

    def rule(left: str, line: str, cross: str, right: str) -> str:
        return left + cross.join(line * (w + 2) for w in widths) + right

    return [
        table.title,
        rule("┏", "━", "┳", "┓"),
        row([header for header, _ in table.columns], "┃"),
        rule("┡", "━", "╇", "┩"),
        *(row(cells, "│") for cells in table.rows),
        rule("└", "─", "┴", "┘"),
    ]


def _piped_width(tables: list[Table]) -> int:
    """At least PIPE_WIDTH, wider when a table needs it, so no id or class is ever cut.

    Measuring a table with rich lays out every cell, as printing it does again; when the
    tables' upper bound (:func:`_width_bound`) already fits within PIPE_WIDTH, that layout is
    skipped: the answer is PIPE_WIDTH either way.
    """
    bounds = [_width_bound(t) for t in tables]
    if all(b is not None and b <= PIPE_WIDTH for b in bounds):
        return PIPE_WIDTH
    from rich.console import Console
    from rich.measure import Measurement

    probe = Console(width=100_000)
    needed = max(Measurement.get(probe, probe.options, t).maximum for t in tables)
    return max(PIPE_WIDTH, needed)


def render_text(result: RunResult, width: int | None = None) -> str:
    """The human report: per-question table, headline rates, slices, latency and errors.

    On a terminal the tables fit its width (long ids fold onto extra lines). Piped or
    redirected, the width is PIPE_WIDTH, or more when a long id needs it, and trailing
    spaces are trimmed, so the report reads well in a file or a CI log.
    """
    tables = [_question_table(result), _slice_table("By form", result.by_form, "form")]
    if result.by_hard_class:
        tables.append(_slice_table("By hard class", result.by_hard_class, "hard class"))
    if result.metrics:
        tables.append(_metrics_table(result))
    head = (
        f"Set {result.set_identifier}  Retriever {result.retriever}  "
        f"Questions {result.question_count}"
    )
    status = "valid" if result.valid else "INVALID"
    lines = [
        *_rate_lines(result),
        *([CI_NOTE] if result.metrics else []),
        f"Latency: p50 {ms(result.latency_ms.p50)}, p95 {ms(result.latency_ms.p95)}",
        f"Errors: {result.error_count}/{result.question_count} "
        f"(max error rate {result.settings.max_error_rate:g}) - run {status}",
    ]
    tty = sys.stdout.isatty()
    if not tty and _plain_console():
        plain = _plain_report(head, tables, lines, width)
        if plain is not None:
            return plain
    return _rich_report(result, tables, lines, width, tty)


def _plain_console() -> bool:
    """Whether rich, writing to a StringIO and told it is no terminal, would print no styles and
    the default box: not in a notebook (rich styles its output there), not on Windows."""
    return sys.platform != "win32" and not ({"IPython", "ipykernel"} & sys.modules.keys())


def _plain_line(text: str, width: int) -> bool:
    """A line rich prints as it is (``markup=False``): no emoji code, no wrap, no tab."""
    return (
        (text.isascii() or {c for c in text if not c.isascii()} <= {"–"})
        and text.isprintable()
        and len(text) <= width
        and (":" not in text or _EMOJI_CODE.search(text) is None)
    )


def _plain_report(
    head: str, tables: list[_Spec], lines: list[str], width: int | None
) -> str | None:
    """The report as :func:`_rich_report` prints it on no terminal, without rich; None unless
    every table is plain (:func:`_plain_lines`) and every line fits unchanged. Without a
    ``width``, the width is :func:`_piped_width`'s: PIPE_WIDTH or the widest table's."""
    # the head line is printed with markup (its [bold] tags): no "[" of the run's may be in it
    if "[" in head:
        return None
    laid_out = [_plain_lines(table, width) for table in tables]
    if any(table is None for table in laid_out):
        return None
    if width is None:  # a plain table's rule is as wide as rich measures the table
        width = max(PIPE_WIDTH, *(len(table[1]) for table in laid_out if table))
    if not all(_plain_line(line, width) for line in [head, *lines]):
        return None
    out = [head, *(laid_out[0] or []), *lines[:2]]
    for table in laid_out[1:]:
        out.extend(table or [])
    out.extend(lines[2:])
    return "\n".join(line.rstrip() for line in out) + "\n"


def _rich_report(
    result: RunResult, specs: list[_Spec], lines: list[str], width: int | None, tty: bool
) -> str:
    from rich.console import Console

    tables = [spec.rich() for spec in specs]
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width or (None if tty else _piped_width(tables)),
        force_terminal=tty,
        highlight=False,
        soft_wrap=False,
    )
    from rich.markup import escape

    console.print(
        f"[bold]Set[/bold] {escape(result.set_identifier)}  "
        f"[bold]Retriever[/bold] {escape(result.retriever)}  "
        f"[bold]Questions[/bold] {result.question_count}",
        markup=True,
    )
    console.print(tables[0], markup=False)
    for line in lines[:2]:  # the rates
        console.print(line, markup=False)
    for table in tables[1:]:
        console.print(table, markup=False)
    for line in lines[2:]:  # the CI note (with metrics), latency, errors
        console.print(line, markup=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _rate_lines(result: RunResult) -> list[str]:
    n = result.question_count
    return [
        rate_line(
            "Top-1 hit rate", result.top1_hit_rate, result.top1_hits, n, result.top1_hit_rate_ci
        ),
        rate_line(
            "Top-3 hit rate", result.top3_hit_rate, result.top3_hits, n, result.top3_hit_rate_ci
        ),
    ]


def metric_value(value: float | None) -> str:
    return "–" if value is None else f"{value:.4f}"


def metric_ci(name: str, intervals: dict[str, Interval | None]) -> str:
    """A metric's interval: hit_rate@k has one (``–`` when its rate is null); means have none."""
    if name not in intervals:
        return ""
    interval = intervals[name]
    return "–" if interval is None else f"[{interval[0]:.4f}, {interval[1]:.4f}]"


# -- the headline: what a pull request comment or a CI job summary shows ---------------------

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


def _pts(delta: float | None) -> str:
    return "–" if delta is None else f"{delta * 100:+.1f} pts"


def _delta_ci(interval: Interval | None) -> str:
    if interval is None:
        return "–"
    return f"[{interval[0] * 100:+.1f}, {interval[1] * 100:+.1f}] pts"


def _flips(verdict: Verdict) -> str:
    top1 = len(verdict.flipped_to_miss) + len(verdict.flipped_to_hit)
    top3 = len(verdict.top3_flipped_to_miss) + len(verdict.top3_flipped_to_hit)
    p_value = "n/a" if verdict.p_value is None else f"{verdict.p_value:.3g}"
    return (
        f"{top1} at top-1 ({len(verdict.flipped_to_miss)} hit→miss, "
        f"{len(verdict.flipped_to_hit)} miss→hit; McNemar exact p = {p_value}), "
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
        delta = _pts(getattr(compared, f"{key}_delta", None))
        judged = judged_rates(verdict, key)
        rows.append(
            [
                label,
                f"{pct(rate)} ({hits}/{result.question_count})",
                ci(getattr(result, f"{key}_hit_rate_ci")),
                delta if judged is None else f"{delta} ({judged})",
                _delta_ci(getattr(compared, f"{key}_delta_ci", None)),
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
        delta = _pts(getattr(verdict, f"{key}_delta", None)) if _compared(verdict) else "–"
        judged = judged_rates(verdict, key)
        if judged is not None:
            line += f"; {judged}: Δ {delta} vs baseline, paired 95% CI {delta_ci}"
        elif delta != "–":
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
        rates.append(f"{label} {rate} {interval}" + (f" Δ {delta}" if delta != "–" else ""))
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


# -- Markdown: the headline, then the tables folded ------------------------------------------


def _folded(summary: str, body: list[str]) -> list[str]:
    """A collapsed block; the blank lines let GitHub render the Markdown inside it."""
    return [f"<details><summary>{summary}</summary>", "", *body, "", "</details>", ""]


def render_markdown(
    result: RunResult,
    verdict: Verdict | None = None,
    run_id: object = None,
    power: PowerReport | None = None,
    power_source: str | None = None,
) -> str:
    # the power line belongs with the headline: a pull-request reader sees it without unfolding
    power_line = _power_line(power, markdown=True, source=power_source)
    lines = [headline_markdown(result, verdict, run_id) + power_line]
    for title, column, slices in (
        ("By form", "form", result.by_form),
        ("By hard class", "hard class", result.by_hard_class),
    ):
        if not slices:
            continue
        table = [
            f"| {column} | questions | top-1 | 95% CI | top-3 | 95% CI |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        table += [md_row(slice_cells(v, s)) for v, s in slices.items()]
        lines += _folded(title, table)
    if result.metrics:
        intervals = result.metrics_ci
        table = ["| metric | value | 95% CI |", "|---|---:|---:|"]
        table += [
            f"| {name} | {metric_value(value)} | {metric_ci(name, intervals)} |"
            for name, value in result.metrics.items()
        ]
        lines += _folded("Metrics", [*table, "", CI_NOTE])
    table = [
        "| id | form | hard class | top-1 | top-3 | rank | latency | error |",
        "|---|---|---|---|---|---:|---:|---|",
    ]
    stale = result.stale_targets()
    table += [md_row(question_cells(q, stale.get(q.id))) for q in result.questions]
    lines += _folded(f"Per question ({result.question_count})", table)
    if verdict is not None:
        from retrieval_eval.judging.regression import render_verdict

        lines += _folded("Verdict details", md_fence(render_verdict(verdict).rstrip("\n")))
    return "\n".join(lines)


# -- CSV and trec_eval -q ----------------------------------------------------------------------

# a spreadsheet runs a cell that starts with one of these as a formula (CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _text_cell(text: str | None) -> str:
    """A text cell a spreadsheet shows as text: prefixed with ``'`` when it would start a formula."""
    if not text:
        return ""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _number(value: float | None) -> str:
    return "" if value is None or value != value else float.__repr__(float(value))


def _ids_cell(ids: list[str]) -> str:
    """A list of ids as one CSV cell: a JSON array (``json.loads`` reads it back)."""
    return _text_cell(json.dumps(list(ids), ensure_ascii=False))


def render_csv(result: RunResult) -> str:
    """One row per question with every per-question figure (RFC 4180, written by :mod:`csv`).

    A list of ids is one cell holding a JSON array (``["a|b", "c"]``): an id may hold ``|``,
    ``,``, quotes or a newline, so no separator could be told apart from the ids; ``csv.reader``
    then ``json.loads`` give the ids back exactly. Hits are 1 or 0; an empty cell is a missing
    value (no rank, no latency, a metric the question does not count in). Text cells that start
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get a leading ``'`` (a JSON
    array starts with ``[``, so it never does).

    The last two columns (after every older one, so readers by position keep working) mark stale
    labels (:meth:`RunResult.stale_targets`): ``stale_label`` is 1 for a question whose every
    target is gone from the index, else 0, and empty when the run's labels were not checked;
    ``dead_ids`` names a stale question's dead targets (as the JSON contract's ``dead_ids``), a
    JSON array (``[]`` for the others), empty when the labels were not checked.
    """
    import csv

    from retrieval_eval.evaluation.metrics import values

    columns = values(result.questions, result.settings.cutoffs)
    metric_values = [column.tolist() for column in columns.values()]
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(
        [
            "id",
            "question",
            "form",
            "hard_class",
            "expected_document_ids",
            "retrieved",
            "top1_hit",
            "top3_hit",
            "first_hit_rank",
            *columns,
            "latency_ms",
            "error",
            "stale_label",
            "dead_ids",
        ]
    )
    checked = result.dead_labels is not None and result.dead_labels.checked
    stale = result.stale_targets()
    for i, q in enumerate(result.questions):
        writer.writerow(
            [
                _text_cell(q.id),
                _text_cell(q.question),
                q.form.value,
                _text_cell(q.hard_class),
                _ids_cell(q.expected_document_ids),
                _ids_cell(q.retrieved),
                int(q.top1_hit),
                int(q.top3_hit),
                "" if q.first_hit_rank is None else q.first_hit_rank,
                *(_number(column[i]) for column in metric_values),
                _number(q.latency_ms),
                _text_cell(q.error),
                int(q.id in stale) if checked else "",
                _ids_cell(stale.get(q.id, [])) if checked else "",
            ]
        )
    return buffer.getvalue()


def render_per_query(result: RunResult) -> str:
    """Per-question metrics as ``trec_eval -q`` prints them: ``metric<TAB>qid<TAB>value`` lines
    (the metric name padded to 22 characters, values to 4 decimals), question by question, then
    the ``all`` lines: ``num_q`` and each metric's mean. A question that does not count in a
    metric (recall, MRR, nDCG of a question without targets) has no line for it."""
    from retrieval_eval.evaluation.metrics import mean, values

    columns = values(result.questions, result.settings.cutoffs)
    rows = {name: column.tolist() for name, column in columns.items()}
    lines = []
    for i, q in enumerate(result.questions):
        for name, column in rows.items():
            value = column[i]
            if value == value:  # NaN: the question does not count
                lines.append(f"{name:<22}\t{q.id}\t{value:.4f}")
    lines.append(f"{'num_q':<22}\tall\t{len(result.questions)}")
    for name, column in columns.items():
        average = mean(column)
        if average is not None:
            lines.append(f"{name:<22}\tall\t{average:.4f}")
    return "\n".join(lines) + "\n"


@paused_gc()  # bulk, acyclic allocation only: no user code runs in here
def render_json(result: RunResult, extra: dict[str, Any] | None = None) -> str:
    """``json.dumps({**result.contract(), **extra}, indent=2, ensure_ascii=False)``: the
    questions written straight from the results when their values are plain
    (:mod:`retrieval_eval.reports.question_json`), else from the contract's records."""
    extra = extra or {}
    if "questions" not in extra:  # else extra's questions are the report's
        halves = marked_halves({**result.contract_head(), "questions": None, **extra})
        if halves is not None:
            around = (halves[0], halves[1] + "\n")
            text = questions_json(result.questions, result.stale_targets(), around)
            if text is not None:
                return text
    return indented_json({**result.contract(), **extra}) + "\n"


def render(
    result: RunResult,
    fmt: str,
    extra: dict[str, Any] | None = None,
    *,
    verdict: Verdict | None = None,
    summary: bool = False,
    power: PowerReport | None = None,
    power_source: str | None = None,
) -> str:
    """The report in ``fmt``; with ``verdict`` the verdict is part of it (text: the block after
    the report; Markdown: the badge and deltas in the headline, the details folded; JSON: the
    caller puts ``verdict.contract()`` in ``extra``). ``summary=True``: the headline alone
    (JSON: :func:`headline_document`); CSV has no summary. ``power``
    (:func:`retrieval_eval.lint.power.run_power`): the smallest drop this set size detects,
    next to the thresholds (text: a last line; Markdown: under the headline, before the folded
    tables; JSON: ``power``), not in a summary; ``power_source``: where its thresholds came from
    (``show``: a config file or the defaults), said on that line (JSON: ``power_thresholds_from``)."""
    run_id = (extra or {}).get("run_id")
    if fmt == "csv":
        if summary:
            raise ValueError("the CSV report has no summary")
        return render_csv(result)
    if fmt == "json":
        if summary:
            return (
                json.dumps(headline_document(result, verdict, extra), indent=2, ensure_ascii=False)
                + "\n"
            )
        if power is not None:
            extra = {**(extra or {}), "power": power.model_dump(mode="json")}
            if power_source is not None:
                extra["power_thresholds_from"] = power_source
        return render_json(result, extra)
    if fmt == "markdown":
        if summary:
            return headline_markdown(result, verdict, run_id)
        return render_markdown(result, verdict, run_id, power, power_source)
    if summary:
        return headline_text(result, verdict, run_id)
    text = render_text(result)
    if verdict is not None:
        from retrieval_eval.judging.regression import render_verdict

        text += "\n" + render_verdict(verdict)
    return text + _power_line(power, source=power_source)


def _power_line(
    power: PowerReport | None, *, markdown: bool = False, source: str | None = None
) -> str:
    if power is None:
        return ""
    from retrieval_eval.lint.render import power_summary

    line = power_summary(power, source)
    return f"\n{md_text(line)}\n" if markdown else f"{line}\n"

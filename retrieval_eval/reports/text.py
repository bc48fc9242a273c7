"""The human report: rich tables of the questions, slices and metrics, with the headline rates.

On a terminal the tables fit its width; piped or redirected, the report is PIPE_WIDTH wide (or
wider when a long id needs it) with trailing spaces trimmed, so it reads well in a file or a CI log.
"""

from __future__ import annotations

import io
import re
import sys
from typing import TYPE_CHECKING, Any

from retrieval_eval.evaluation.results import RunResult, SliceRates
from retrieval_eval.reports.cells import (
    CI_NOTE,
    metric_ci,
    question_cells,
    rate_line,
    slice_cells,
)
from retrieval_eval.reports.numbers import decimal, ms

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

PIPE_WIDTH = 140  # text report width when stdout is not a terminal (CI logs, files)
ERROR_WIDTH = 60  # error texts wrap within this many characters
_EMOJI_CODE = re.compile(r":\S*?:")  # what rich may read as an emoji code (":smile:")
_MARKUP_TAG = re.compile(r"\[[a-zA-Z#/@]")  # what may open a rich markup tag ("[95%" does not)


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


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
        table.add_row(name, decimal(value), metric_ci(name, intervals))
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

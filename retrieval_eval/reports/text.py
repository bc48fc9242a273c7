"""The human report: rich tables of the questions, slices and metrics, with the headline rates.

On a terminal the tables fit its width; piped or redirected, the report is PIPE_WIDTH wide (or
wider when a long id needs it) with trailing spaces trimmed, so it reads well in a file or a CI
log. Every text table of the project is printed by :func:`print_tables`.
"""

from __future__ import annotations

import io
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from retrieval_eval.evaluation.results import RunResult, SliceRates, miss_depth
from retrieval_eval.formats.numbers import decimal, ms
from retrieval_eval.reports.cells import (
    CI_NOTE,
    depth_headers,
    metric_ci,
    question_cells,
    rate_line,
    slice_cells,
)

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

PIPE_WIDTH = 140  # text report width when stdout is not a terminal (CI logs, files)
ERROR_WIDTH = 60  # error texts wrap within this many characters
# a text report is read by people: past this many questions it lists the misses and errors only
# (the first of them), and says where every question is (the CSV and JSON reports)
QUESTION_ROWS = 100


def new_table(title: str | None = None, *, plain: bool = False) -> Table:
    """A rich table; ``plain``: no box, columns two spaces apart (aligned columns)."""
    from rich.table import Table

    if plain:
        return Table(title=title, box=None, pad_edge=False, padding=(0, 1), title_justify="left")
    return Table(title=title, title_justify="left")


def add_rows(table: Table, rows: Sequence[Sequence[str]]) -> None:
    """Rows of plain text: a stored id such as ``[/f]`` is data, never rich markup."""
    from rich.text import Text

    for row in rows:
        table.add_row(*(Text(cell) for cell in row))


def print_tables(
    parts: Sequence[RenderableType], width: int | None = None, *, tty: bool | None = None
) -> str:
    """``parts`` (tables and lines of text, printed as they are) as text.

    On a terminal (``tty``, by default whether stdout is one) the width is the terminal's;
    otherwise ``width``, else PIPE_WIDTH or the widest table's natural width, so that no id or
    class is cut. Trailing spaces are trimmed.
    """
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table

    tty = sys.stdout.isatty() if tty is None else tty
    if width is None and not tty:
        probe = Console(width=100_000)
        tables = [part for part in parts if isinstance(part, Table)]
        needed = [Measurement.get(probe, probe.options, t).maximum for t in tables]
        width = max([PIPE_WIDTH, *needed])
    buffer = io.StringIO()
    console = Console(
        file=buffer, width=width, force_terminal=tty, highlight=False, soft_wrap=False
    )
    for part in parts:
        console.print(part, markup=False, emoji=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _slice_table(
    title: str, slices: dict[str, SliceRates], column: str, depths: Sequence[int]
) -> Table:
    table = new_table(title)
    table.add_column(column, overflow="fold")  # a class name folds: "…" would cut it
    table.add_column("questions", justify="right")
    for header in depth_headers(depths):
        table.add_column(header, justify="right", no_wrap=header == "95% CI")
    add_rows(table, [slice_cells(value, s, depths) for value, s in slices.items()])
    return table


def _question_table(result: RunResult) -> tuple[Table, str | None]:
    questions = result.questions
    depths = result.depths
    note = None
    title = "Per question"
    if len(questions) > QUESTION_ROWS:
        deepest = miss_depth(depths)
        missed = [q for q in questions if q.error or not q.hit_at(deepest)]
        questions = missed[:QUESTION_ROWS]
        shown = f"first {len(questions)} of {len(missed)}" if len(missed) > len(questions) else ""
        title = f"Misses and errors ({shown or len(missed)})"
        note = (
            f"{len(result.questions) - len(questions)} questions not listed here; "
            "`--format csv` (or json) lists every question"
        )
    table = new_table(title)
    # ids and classes fold rather than end in "…": a truncated id cannot be looked up
    table.add_column("id", overflow="fold")
    table.add_column("form")
    table.add_column("hard class", overflow="fold")
    for header in depth_headers(depths, interval=False):
        table.add_column(header)
    table.add_column("rank", justify="right")
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("error", overflow="fold", max_width=ERROR_WIDTH)
    stale = result.stale_targets()
    add_rows(table, [question_cells(q, stale.get(q.id), depths) for q in questions])
    return table, note


def _metrics_table(result: RunResult) -> Table:
    table = new_table("Metrics")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_column("95% CI", justify="right", no_wrap=True)
    intervals, shown = result.metrics_ci, result.settings.shown_metric
    add_rows(
        table,
        [
            [shown(name), decimal(value), metric_ci(name, intervals)]
            for name, value in result.metrics.items()
        ],
    )
    return table


def render_text(result: RunResult, width: int | None = None) -> str:
    """The human report: headline rates, per-question table, slices, latency and errors."""
    from rich.text import Text

    depths = result.depths
    tables = [_slice_table("By form", result.by_form, "form", depths)]
    if result.by_hard_class:
        tables.append(_slice_table("By hard class", result.by_hard_class, "hard class", depths))
    if result.metrics:
        tables.append(_metrics_table(result))
    head = Text.assemble(
        ("Set", "bold"),
        f" {result.set_identifier}  ",
        ("Retriever", "bold"),
        f" {result.retriever}  ",
        ("Questions", "bold"),
        f" {result.question_count}",
    )
    status = "valid" if result.valid else "INVALID"
    n = result.question_count
    rates = [
        rate_line(
            f"Top-{d} hit rate", result.hit_rate(d), result.hits(d) or 0, n, result.hit_rate_ci(d)
        )
        for d in depths
    ]
    tail = [
        *([CI_NOTE] if result.metrics else []),
        f"Latency: p50 {ms(result.latency_ms.p50)}, p95 {ms(result.latency_ms.p95)}",
        f"Errors: {result.error_count}/{result.question_count} "
        f"(max error rate {result.settings.max_error_rate:g}) - run {status}",
    ]
    questions, not_listed = _question_table(result)
    # the headline rates first: a long question table must not push them off the screen
    parts: list[RenderableType] = [head, *map(Text, rates), questions]
    if not_listed:
        parts.append(Text(not_listed))
    parts += tables
    return print_tables([*parts, *map(Text, tail)], width)

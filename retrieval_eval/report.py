"""Rendering a run as text (rich tables), Markdown or the JSON contract.

rich is imported by the text report only: JSON and Markdown reports, and ``pct`` for other
commands, do without it.
"""

from __future__ import annotations

import io
import json
import sys
import uuid
from collections.abc import Callable
from json.encoder import encode_basestring
from typing import TYPE_CHECKING, Any

from retrieval_eval.results import RunResult, SliceRates, paused_gc

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

FORMATS = ("text", "json", "markdown")
PIPE_WIDTH = 140  # text report width when stdout is not a terminal (CI logs, files)
ERROR_WIDTH = 60  # error texts wrap within this many characters


def stderr_console() -> Console:
    from rich.console import Console

    return Console(stderr=True)


def pct(rate: float | None) -> str:
    return "–" if rate is None else f"{rate * 100:.1f}%"


def rate_line(label: str, rate: float | None, hits: int, count: int) -> str:
    return f"{label}: {pct(rate)} ({hits}/{count})"


def _ms(value: float | None) -> str:
    return "–" if value is None else f"{value:.1f} ms"


def _slice_table(title: str, slices: dict[str, SliceRates], column: str) -> Table:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    table.add_column(column)
    table.add_column("questions", justify="right")
    table.add_column("top-1", justify="right")
    table.add_column("top-3", justify="right")
    for value, s in slices.items():
        table.add_row(
            value,
            str(s.questions),
            f"{pct(s.top1_hit_rate)} ({s.top1_hits})",
            f"{pct(s.top3_hit_rate)} ({s.top3_hits})",
        )
    return table


def _question_table(result: RunResult) -> Table:
    from rich.table import Table

    table = Table(title="Per question", title_justify="left")
    # ids and classes fold rather than end in "…": a truncated id cannot be looked up
    table.add_column("id", overflow="fold")
    table.add_column("form")
    table.add_column("hard class", overflow="fold")
    table.add_column("top-1")
    table.add_column("top-3")
    table.add_column("rank", justify="right")
    table.add_column("latency", justify="right", no_wrap=True)
    table.add_column("error", overflow="fold", max_width=ERROR_WIDTH)
    for q in result.questions:
        table.add_row(
            q.id,
            q.form.value,
            q.hard_class or "",
            "hit" if q.top1_hit else "miss",
            "hit" if q.top3_hit else "miss",
            "" if q.first_hit_rank is None else str(q.first_hit_rank),
            _ms(q.latency_ms),
            q.error or "",
        )
    return table


def _piped_width(tables: list[Table]) -> int:
    """At least PIPE_WIDTH, wider when a table needs it, so no id or class is ever cut."""
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
    from rich.console import Console
    from rich.table import Table

    tables = [_question_table(result), _slice_table("By form", result.by_form, "form")]
    if result.by_hard_class:
        tables.append(_slice_table("By hard class", result.by_hard_class, "hard class"))
    if result.metrics:
        metrics = Table(title="Metrics", title_justify="left")
        metrics.add_column("metric")
        metrics.add_column("value", justify="right")
        for name, value in result.metrics.items():
            metrics.add_row(name, "–" if value is None else f"{value:.4f}")
        tables.append(metrics)
    tty = sys.stdout.isatty()
    buffer = io.StringIO()
    console = Console(
        file=buffer,
        width=width or (None if tty else _piped_width(tables)),
        force_terminal=tty,
        highlight=False,
        soft_wrap=False,
    )
    console.print(
        f"[bold]Set[/bold] {result.set_identifier}  [bold]Retriever[/bold] {result.retriever}  "
        f"[bold]Questions[/bold] {result.question_count}",
        markup=True,
    )
    console.print(tables[0], markup=False)
    console.print(
        rate_line("Top-1 hit rate", result.top1_hit_rate, result.top1_hits, result.question_count),
        markup=False,
    )
    console.print(
        rate_line("Top-3 hit rate", result.top3_hit_rate, result.top3_hits, result.question_count),
        markup=False,
    )
    for table in tables[1:]:
        console.print(table, markup=False)
    console.print(
        f"Latency: p50 {_ms(result.latency_ms.p50)}, p95 {_ms(result.latency_ms.p95)}", markup=False
    )
    status = "valid" if result.valid else "INVALID"
    console.print(
        f"Errors: {result.error_count}/{result.question_count} "
        f"(max error rate {result.settings.max_error_rate:g}) - run {status}",
        markup=False,
    )
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(result: RunResult) -> str:
    lines = [
        f"# {result.set_identifier} × {result.retriever}",
        "",
        f"- {rate_line('Top-1 hit rate', result.top1_hit_rate, result.top1_hits, result.question_count)}",
        f"- {rate_line('Top-3 hit rate', result.top3_hit_rate, result.top3_hits, result.question_count)}",
        f"- Latency: p50 {_ms(result.latency_ms.p50)}, p95 {_ms(result.latency_ms.p95)}",
        f"- Errors: {result.error_count} ({'valid' if result.valid else 'INVALID'} run)",
        "",
    ]
    for title, slices in (("By form", result.by_form), ("By hard class", result.by_hard_class)):
        if not slices:
            continue
        lines += [
            f"## {title}",
            "",
            "| value | questions | top-1 | top-3 |",
            "|---|---:|---:|---:|",
        ]
        lines += [
            f"| {_md_escape(v)} | {s.questions} | {pct(s.top1_hit_rate)} | {pct(s.top3_hit_rate)} |"
            for v, s in slices.items()
        ]
        lines.append("")
    if result.metrics:
        lines += ["## Metrics", "", "| metric | value |", "|---|---:|"]
        lines += [
            f"| {name} | {'–' if value is None else f'{value:.4f}'} |"
            for name, value in result.metrics.items()
        ]
        lines.append("")
    lines += [
        "## Per question",
        "",
        "| id | form | hard class | top-1 | top-3 | rank | latency | error |",
        "|---|---|---|---|---|---:|---:|---|",
    ]
    for q in result.questions:
        lines.append(
            f"| {_md_escape(q.id)} | {q.form.value} | {_md_escape(q.hard_class or '')} | "
            f"{'hit' if q.top1_hit else 'miss'} | {'hit' if q.top3_hit else 'miss'} | "
            f"{q.first_hit_rank or ''} | {_ms(q.latency_ms)} | {_md_escape(q.error or '')} |"
        )
    return "\n".join(lines) + "\n"


@paused_gc()  # bulk, acyclic allocation only: no user code runs in here
def render_json(result: RunResult, extra: dict[str, Any] | None = None) -> str:
    return indented_json({**result.contract(), **(extra or {})}) + "\n"


def indented_json(document: dict[str, Any]) -> str:
    """``json.dumps(document, indent=2, ensure_ascii=False)``: the same text, in less than half
    the time.

    The standard library encodes in C only without ``indent``; with it every value goes through
    its pure-Python encoder: 0.19 s for a 20,000-question report, 0.08 s here. The
    ``questions`` list (flat records of scalars and lists of scalars) is laid out here by the
    same rules; the rest of the document, and any record holding something else, goes through
    :func:`json.dumps`. ``tests/test_report.py`` checks the two texts are identical.
    """
    records = document.get("questions")
    laid_out = _records(records, 1) if isinstance(records, list) and records else None
    if laid_out is None:
        return json.dumps(document, indent=2, ensure_ascii=False)
    marker = f"questions-{uuid.uuid4().hex}"
    text = json.dumps({**document, "questions": marker}, indent=2, ensure_ascii=False)
    quoted = f'"{marker}"'
    if text.count(quoted) != 1:  # cannot happen with a fresh uuid; never guess
        return json.dumps(document, indent=2, ensure_ascii=False)
    return text.replace(quoted, laid_out)


def _float(value: float) -> str:
    # json's own rules (allow_nan=True): repr, or JavaScript's names for the special values
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    return float.__repr__(value)


# plain scalars by their exact type, as json.dumps writes them; subclasses (a StrEnum, an
# IntEnum) are not here and send their record to the general encoder
_SCALARS: dict[type, Callable[[Any], str]] = {
    str: encode_basestring,
    int: int.__repr__,
    float: _float,
    bool: lambda value: "true" if value else "false",
    type(None): lambda value: "null",
}


def _records(records: list[Any], level: int) -> str | None:
    """A non-empty list of flat records at indentation ``level``; None when one is not flat.

    A flat record is a non-empty dict with string keys whose values are plain scalars or lists
    of plain scalars.
    """
    scalars = _SCALARS
    keys: dict[str, str] = {}
    pad = "\n" + "  " * (level + 1)
    field_pad = "\n" + "  " * (level + 2)
    item_pad = "\n" + "  " * (level + 3)
    list_end = field_pad + "]"
    parts = []
    for record in records:
        if type(record) is not dict or not record:
            return None
        fields = []
        for key, value in record.items():
            name = keys.get(key)
            if name is None:
                if type(key) is not str:
                    return None
                name = keys[key] = encode_basestring(key) + ": "
            encode = scalars.get(type(value))
            if encode is not None:
                fields.append(name + encode(value))
            elif type(value) is not list:
                return None
            elif not value:
                fields.append(name + "[]")
            else:
                items = []
                for item in value:
                    encode = scalars.get(type(item))
                    if encode is None:
                        return None
                    items.append(encode(item))
                fields.append(name + "[" + item_pad + ("," + item_pad).join(items) + list_end)
        parts.append("{" + field_pad + ("," + field_pad).join(fields) + pad + "}")
    return "[" + pad + ("," + pad).join(parts) + "\n" + "  " * level + "]"


def render(result: RunResult, fmt: str, extra: dict[str, Any] | None = None) -> str:
    if fmt == "json":
        return render_json(result, extra)
    if fmt == "markdown":
        return render_markdown(result)
    return render_text(result)

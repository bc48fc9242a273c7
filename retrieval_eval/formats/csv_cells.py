"""Every CSV the project emits goes through :func:`csv_text`, its text cells escaped so a
spreadsheet never runs them as formulas (:func:`text_cell`), and read back by :func:`read_cell`."""

from __future__ import annotations

import io
from collections.abc import Iterable, Sequence

# a spreadsheet runs a cell that starts with one of these as a formula (CSV injection)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """The one CSV writer (RFC 4180, by :mod:`csv`): a report, a leaderboard, a judgments file.

    A text cell (``str``) that would start a formula is written as text (:func:`text_cell`);
    numbers are passed as numbers (never escaped: ``-0.1`` stays a number), None is an empty
    cell. Files read back (judgments) undo the escape with :func:`read_cell`.
    """
    import csv

    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(header)
    writer.writerows([text_cell(c) if isinstance(c, str) else c for c in row] for row in rows)
    return buffer.getvalue()


def text_cell(text: str) -> str:
    """A text cell a spreadsheet shows as text: prefixed with ``'`` when it would start a
    formula, once past any ``'`` it already starts with (so :func:`read_cell` gives it back)."""
    return "'" + text if text.lstrip("'").startswith(FORMULA_STARTS) else text


def read_cell(cell: str) -> str:
    """The text :func:`text_cell` was given: its ``'`` dropped when one escaped a formula (a
    spreadsheet that saved the text without it gives it back unchanged)."""
    escaped = cell.startswith("'") and cell.lstrip("'").startswith(FORMULA_STARTS)
    return cell[1:] if escaped else cell

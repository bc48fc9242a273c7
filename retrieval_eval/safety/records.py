"""Rows of a JSONL or CSV input file (a query log, a judgments file), each with its line number.

Refused before they are parsed: a file over the set-file size limit, or bytes that are not UTF-8
(a BOM is allowed). A line that is no JSON, or a CSV row with more values than the header has
columns, is a problem naming the file and the line; at most ``MAX_PROBLEMS`` are listed. Blank
JSONL lines are skipped; CSV cells are strings, an empty one left out of its row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_eval.safety.limits import MAX_SET_FILE_BYTES, refuse_too_large

if TYPE_CHECKING:
    from pydantic import ValidationError

MAX_PROBLEMS = 20
Fail = Callable[[Sequence[str]], Exception]  # the error type the caller raises with problems


def read_records(path: Path, what: str, fail: Fail) -> tuple[list[Any], list[int]]:
    """The rows of ``path`` (``.jsonl`` or ``.csv``) and their line numbers; ``what`` names the
    kind of file in messages ("query log")."""
    try:
        refuse_too_large(path, MAX_SET_FILE_BYTES, what, lambda m: fail([m]))
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise fail([f"{path}: cannot read the {what}: {exc.strerror}"]) from None
    except UnicodeDecodeError as exc:
        raise fail([f"{path}: not UTF-8 text (byte {exc.start})"]) from None
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        return _jsonl(path, text, fail)
    if suffix == ".csv":
        return _csv(path, text, fail)
    raise fail([f"{path}: a {what} is a .jsonl or .csv file"])


def _jsonl(path: Path, text: str, fail: Fail) -> tuple[list[Any], list[int]]:
    import orjson

    rows: list[Any] = []
    lines: list[int] = []
    problems: list[str] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            problems.append(f"{path}: line {number}: invalid JSON: {exc.msg}")
            continue
        lines.append(number)
    if problems:
        raise fail(problems[:MAX_PROBLEMS])
    return rows, lines


def _csv(path: Path, text: str, fail: Fail) -> tuple[list[Any], list[int]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    rows: list[Any] = []
    lines: list[int] = []
    try:
        for record in reader:
            if None in record:
                raise fail(
                    [f"{path}: line {reader.line_num}: more values than the header has columns"]
                )
            rows.append({k: v for k, v in record.items() if v not in (None, "")})
            lines.append(reader.line_num)
    except csv.Error as exc:
        raise fail([f"{path}: line {reader.line_num}: {exc}"]) from None
    return rows, lines


def row_errors(
    exc: ValidationError, lines: Sequence[int], limit: int = MAX_PROBLEMS
) -> list[tuple[int | str, str, str]]:
    """(line, field, message) of the first ``limit`` errors of validating :func:`read_records`'
    rows as one list: the error's row found by its index in ``lines`` ("?" when it has none),
    its field the rest of the location ("row" for the row as a whole)."""
    found = []
    for err in exc.errors()[:limit]:
        index = err["loc"][0] if err["loc"] else 0
        field = ".".join(str(part) for part in err["loc"][1:]) or "row"
        line = lines[index] if isinstance(index, int) and index < len(lines) else "?"
        found.append((line, field, str(err["msg"])))
    return found

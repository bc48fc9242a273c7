"""What one input file may cost, and how much of its content a message may quote.

A set file or a config is data from anywhere (a pull request, a spreadsheet export, a fuzzer).
Each limit below turns what would be a crash, a hang or an out-of-memory into an exit-2 error
that names the file and the limit:

- size: a set file over 256 MiB, a config over 1 MiB, is refused before it is read;
- nesting: lists and mappings nested more than 50 levels deep are refused (a valid set is at
  most 4 deep; a JSON/YAML document, or a JSONL line, is level 1);
- YAML aliases: refused in set files (a set has no use for them, and a few lines of aliases
  expand to billions of values); a config may use them, expanding to at most 100,000 values
  and never containing itself (``retrieval_eval/safety/yaml_input.py``);
- integers: longer than Python's int-to-text limit (4,300 digits by default) is an error;
- messages: any input value is quoted through :func:`quote`, at most ~200 characters of it.

This module imports nothing heavy: the models use :func:`quote`.
"""

from __future__ import annotations

import reprlib
import sys
from collections.abc import Callable
from itertools import compress
from pathlib import Path
from typing import Any

MAX_SET_FILE_BYTES = 256 * 2**20
MAX_CONFIG_FILE_BYTES = 2**20
MAX_NESTING = 50
MAX_CONFIG_VALUES = 100_000
MAX_QUOTED = 200


def shorten(text: str, limit: int = MAX_QUOTED) -> str:
    """``text`` cut to about ``limit`` characters, saying how long it was."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"


class _Quoter(reprlib.Repr):
    """``repr`` that looks at a bounded part of its value: long strings and bytes are sliced
    before they are quoted, containers show a few items a few levels deep (an alias bomb or a
    cycle included), and an int too long to print is described instead."""

    def __init__(self) -> None:
        super().__init__()
        self.maxlevel = 3
        self.maxstring = self.maxother = MAX_QUOTED
        self.maxlong = 60
        self.maxdict = 4
        self.maxlist = self.maxtuple = self.maxset = self.maxfrozenset = self.maxdeque = 6

    def repr_bytes(self, value: bytes, level: int) -> str:
        text = repr(value[: self.maxstring])
        return text if len(value) <= self.maxstring else f"{text}..."

    def repr_int(self, value: int, level: int) -> str:
        try:
            return super().repr_int(value, level)
        except ValueError:  # past the int-to-text limit
            return f"<an integer of about {int(value.bit_length() * 0.30103):,} digits>"


_QUOTER = _Quoter()


def quote(value: Any) -> str:
    """``repr(value)`` for a message, at most ~200 characters of it, whatever the value."""
    try:
        text = _QUOTER.repr(value)
    except Exception:  # a repr that fails: the type still says something
        text = f"<{type(value).__name__}>"
    return shorten(text)


def quote_some(values: list[Any], most: int = 5) -> str:
    """The first ``most`` values quoted, comma-separated, ~200 characters in all, and how many
    more there are."""
    shown = shorten(", ".join(map(quote, values[:most])))
    return shown + (f" and {len(values) - most:,} more" if len(values) > most else "")


def too_large(size: int, limit: int, kind: str) -> str:
    """The message for a file over its size limit (without the file's name)."""
    return f"{size:,} bytes, over the limit for {kind} ({limit / 2**20:g} MiB)"


def refuse_too_large(path: Path, limit: int, kind: str, error: Callable[[str], Exception]) -> None:
    """Raise ``error(message)`` when ``path`` is over ``limit`` bytes, before anything reads it:
    the one size check of every input file. The stat's ``OSError`` is left to the caller, which
    reports it with its other read errors."""
    size = path.stat().st_size
    if size > limit:
        raise error(f"{path}: {too_large(size, limit, kind)}")


def too_deep(limit: int = MAX_NESTING) -> str:
    return f"nested more than {limit} levels deep (the limit is {limit})"


def too_long_integer(digits: int) -> str:
    return (
        f"an integer of {digits:,} digits is over the limit of "
        f"{sys.get_int_max_str_digits():,} digits"
    )


def digits(literal: str) -> int:
    """How many digits an integer literal has (``-1_000`` has 4)."""
    return len(literal.strip().lstrip("+-").replace("_", ""))


_CONTAINERS: dict[type, bool] = {dict: True, list: True}
_IS_CONTAINER = _CONTAINERS.get


def nesting_exceeds(value: Any, limit: int = MAX_NESTING) -> bool:
    """True when ``value`` holds lists/dicts more than ``limit`` levels deep (itself level 1).

    For trees (what JSON, or YAML without aliases, parses to): level by level, each level's
    children filtered at C speed, stopping past the limit; a cycle stops there too.
    """
    level = [value] if _IS_CONTAINER(type(value)) else []
    for _ in range(limit):
        children: list[Any] = []
        add = children.extend
        for container in level:
            add(container.values() if type(container) is dict else container)
        level = list(compress(children, map(_IS_CONTAINER, map(type, children))))
        if not level:
            return False
    return True

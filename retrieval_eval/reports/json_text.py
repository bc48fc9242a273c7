"""The JSON report's text: what ``json.dumps(document, indent=2, ensure_ascii=False)`` writes,
in a fraction of its time.

The standard library encodes in C only without ``indent``; with it every value goes through its
pure-Python encoder (0.19 s for a 20,000-question report). Nearly all of a report is its
``questions`` list, so that list is laid out here and spliced into ``json.dumps`` of the rest:

- With orjson installed (an optional accelerator, not a dependency: this venv has it through
  ranx and langsmith), the list is written by orjson, ~0.03 s for 20,000 questions with the
  checks, when every value is one orjson writes exactly as json does (:func:`_orjson_records`
  says which; a probe checks the installed orjson once per process).
- Otherwise a list of flat records (dicts of plain scalars and lists of plain scalars) is laid
  out field by field by :func:`_records`, ~0.1 s; anything else (a subclass such as a StrEnum,
  a tuple, a nested dict) goes to :func:`json.dumps` whole.

The run report (``report.render_json``) writes its questions from the results' columns first
(:mod:`retrieval_eval.reports.question_json`) and comes here when a value is not plain.

Edge cases are json's: NaN and the infinities are written ``NaN``, ``Infinity`` and
``-Infinity`` (``allow_nan``); strings keep non-ASCII characters and escape only what JSON must.
``tests/reports/test_json_text.py`` compares every path with ``json.dumps`` byte for byte.
"""

from __future__ import annotations

import json
import math
import uuid
from collections.abc import Callable, Iterator
from functools import cache
from itertools import chain, compress, repeat
from json.encoder import encode_basestring
from operator import is_
from typing import Any


def indented_json(document: dict[str, Any]) -> str:
    """``json.dumps(document, indent=2, ensure_ascii=False)``: the same text, in less than half
    the time. The ``questions`` list is laid out here when its records are flat (see the module
    docstring); the rest of the document goes through :func:`json.dumps`."""
    records = document.get("questions")
    laid_out = None
    if isinstance(records, list) and records:
        laid_out = _orjson_records(records) or _records(records, 1)
    spliced = None if laid_out is None else spliced_questions(document, laid_out)
    return json.dumps(document, indent=2, ensure_ascii=False) if spliced is None else spliced


def spliced_questions(document: dict[str, Any], laid_out: str) -> str | None:
    """``document`` as indented JSON with ``laid_out`` (a list's text at indentation level 1)
    as the value of its ``questions`` key; None in the impossible case that the marker put
    there is found twice (never guess)."""
    halves = marked_halves(document)
    return None if halves is None else halves[0] + laid_out + halves[1]


def marked_halves(document: dict[str, Any]) -> tuple[str, str] | None:
    """``document`` as indented JSON, before and after the value of its ``questions`` key
    (there a unique marker is written, then cut out); None in the impossible case that the
    marker is found twice."""
    marker = f"questions-{uuid.uuid4().hex}"
    text = json.dumps({**document, "questions": marker}, indent=2, ensure_ascii=False)
    parts = text.split(f'"{marker}"')
    return (parts[0], parts[1]) if len(parts) == 2 else None


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


# orjson, when installed, writes what json.dumps(indent=2, ensure_ascii=False) writes for these
# values but floats: NaN and the infinities (orjson: null) and magnitudes below 1e-4 (orjson:
# 0.00001 for Python's 1e-05); records holding such a float are laid out by _records
_PLAIN = frozenset({str, int, float, bool, type(None), list, dict})
_DEPTH = 254
_MOST_VALUES = 5_000_000  # ~250,000 questions' records
_LEAST_FIXED = 1e-4  # from here up (and 0) the two agree on every float
_WRAPPED_START, _WRAPPED_END = '{\n  "questions": ', "\n}"
_PROBE: list[Any] = [
    0.1,
    -0.0,
    1e-4,
    0.011761999985537841,
    1e16,
    1e22,
    12,
    True,
    None,
    [],
    'é\u2028\x7f\x01"\\',
]


def _written_alike(value: Any) -> bool:
    """Whether ``value`` holds only dicts, lists, plain scalars of their exact types, and
    floats both write alike (0, or finite and at least 1e-4 in magnitude), to 254 levels
    (orjson's limit) and 5 million values in all (past those json takes it, and refuses a
    cycle). Checked a level at a time at C speed."""
    level = [value]
    budget = _MOST_VALUES
    for _ in range(_DEPTH):
        if not level:
            return True
        budget -= len(level)
        if budget < 0:  # a cycle held twice doubles at every level
            return False
        types = list(map(type, level))
        kinds = set(types)
        if not kinds <= _PLAIN:
            return False
        if float in kinds:
            floats = list(_of_type(level, types, float))
            if not all(map(math.isfinite, floats)):
                return False
            if min(map(abs, floats)) < _LEAST_FIXED and any(
                0 < abs(number) < _LEAST_FIXED for number in floats
            ):
                return False
        below: list[Any] = []
        if dict in kinds:
            below += chain.from_iterable(map(dict.values, _of_type(level, types, dict)))
        if list in kinds:
            below += chain.from_iterable(_of_type(level, types, list))
        level = below
    return False


def _of_type(values: list[Any], types: list[type], kind: type) -> Iterator[Any]:
    """The values whose type (``types``, in order) is exactly ``kind``, at C speed."""
    return compress(values, map(is_, types, repeat(kind)))


@cache
def _orjson_indent() -> Callable[[Any], bytes] | None:
    """orjson's indented ``dumps``, when it is installed and writes the probe as json does."""
    try:
        import orjson
    except ImportError:
        return None
    options = (
        orjson.OPT_INDENT_2 | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATETIME
    )

    def dumps(value: Any) -> bytes:
        return orjson.dumps(value, option=options)

    probe = {"questions": [{"k": _PROBE, "e": {}}]}  # as _orjson_records wraps the records
    if dumps(probe).decode() != json.dumps(probe, indent=2, ensure_ascii=False):
        return None  # an orjson that formats differently: never trusted
    return dumps


def _orjson_records(records: list[Any]) -> str | None:
    """:func:`_records`' text by orjson (~10 times faster); None when orjson is not installed
    or a value is one it could write otherwise than json (:func:`_written_alike`), a string it
    refuses (a lone surrogate), a key that is no string or an integer past 64 bits."""
    dumps = _orjson_indent()
    if dumps is None or not _written_alike(records):
        return None
    try:
        # inside a one-key object the list is laid out at level 1, as the report nests it
        text = dumps({"questions": records}).decode()
    except TypeError:  # orjson.JSONEncodeError: a lone surrogate, an integer past 64 bits
        return None
    return text[len(_WRAPPED_START) : -len(_WRAPPED_END)]

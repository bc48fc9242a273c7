"""The JSON report's ``questions`` list written column by column, straight from the results.

What ``json.dumps(contract, indent=2, ensure_ascii=False)`` writes for the contract's per-question
records (:func:`retrieval_eval.evaluation.results._question_contract`), without building them: each field
is read for every question in one pass, its values' types checked in one pass, and its texts
made at C speed; the records' pieces are then placed column by column into one list (extended
slice assignment) and joined once. For 20,000 questions the records, their checks and their
orjson text took 2.0–2.2 times as long (:mod:`retrieval_eval.reports.json_text`; docs/benchmarks.md §8).

How each column's texts are made, and why they are json's:

- Strings only (``join`` refuses anything else; a str subclass's text is json's too), none
  holding a character JSON escapes (``"``, ``\\``, below U+0020: json's
  ``ESCAPE`` class, counted on the UTF-8 bytes by :func:`_escaped`): the string itself between
  quotes. ``ensure_ascii=False`` writes everything else as it is, lone surrogates included.
- Exact ``bool`` only: ``true``/``false``; ``None`` only: ``null``. Forms (all
  :class:`QuestionForm` members): each member's ``str()``, made once.
- Few distinct values of kinds where equal values have equal texts (strings and None, or
  integers and None; not ``1 == True`` nor ``0.0 == -0.0``): each distinct value written once,
  looked up per question (hard classes, ranks, errors: no string made per question).
- Other plain scalars (exact ``str``, ``int``, ``float``, ``bool``, ``None``): ``json.dumps`` of
  the whole column (json's C encoder: the same string escaping and ``int``/``float`` reprs as
  its indented encoder, NaN and the infinities included) split at its ``", "`` separators. A
  value's own text holding ``", "`` (a string) gives more pieces than values: then each value
  is written by itself (:data:`retrieval_eval.reports.json_text._SCALARS`).
- Floats, with orjson installed and every float one it writes as json does
  (:func:`_floats_alike`, as :func:`retrieval_eval.reports.json_text._written_alike`): orjson's text of the column, split; Python's
  float ``repr`` is most of the column's time otherwise (~20 ms for 20,000).
- ``retrieved`` (lists): when none is empty and every item is a string with nothing to escape,
  each list joined by the separator (``join`` refuses anything but a str; a str subclass's text
  is what json writes for it); else every item as above, regrouped, ``[]`` for an empty list.

None (the caller then takes the records' path) when there are no questions or a value is not
one of those types (a subclass of int or float, a tuple, a dict, a list of lists). Stale
questions (``stale_label``/``dead_ids``, :meth:`retrieval_eval.evaluation.results.RunResult.stale_targets`)
get their two fields after ``error``, as the contract appends them. ``tests/reports/test_question_json.py``
compares every path with ``json.dumps`` of the contract, byte for byte.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from itertools import chain, islice, repeat
from json.encoder import encode_basestring
from math import isfinite
from operator import attrgetter, itemgetter
from typing import Any

from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.reports.json_text import _LEAST_FIXED, _SCALARS, _orjson_indent

# the contract's fields, in its order (tests/reports/test_question_json.py checks them against it)
FIELDS = (
    "id",
    "form",
    "hard_class",
    "top1_hit",
    "top3_hit",
    "first_hit_rank",
    "retrieved",
    "latency_ms",
    "error",
)
_FORM, _RETRIEVED = FIELDS.index("form"), FIELDS.index("retrieved")
_PLAIN = frozenset(_SCALARS)
# kinds whose equal values have the same text (unlike 1 == 1.0 == True, or 0.0 == -0.0)
_MEMOISABLE = (frozenset({str, type(None)}), frozenset({int, type(None)}))
_RECORD, _FIELD, _ITEM = "\n    ", "\n      ", "\n        "  # the list sits at level 1
_OPEN_LIST, _CLOSE_LIST = "[" + _ITEM, _FIELD + "]"

# a segment of the records' text: the same string in every record, or one text per record
Segment = str | Sequence[str]


def questions_json(
    questions: Sequence[QuestionResult],
    stale: dict[str, list[str]],
    around: tuple[str, str] = ("", ""),
) -> str | None:
    """The contract's ``questions`` as indented JSON at level 1, between ``around``'s two texts
    (the report's, :func:`retrieval_eval.reports.json_text.marked_halves`: the 6 MB text is made once);
    None when a value is not plain."""
    if not questions:
        return None
    columns = _columns(questions)
    if columns is None:
        return None
    columns[_FORM] = _form_texts(columns[_FORM])
    segments: list[Segment] = []
    for index, (name, column) in enumerate(zip(FIELDS, columns, strict=True)):
        encoded = _lists(column) if index == _RETRIEVED else _scalars(column)
        if encoded is None:
            return None
        segments += [("{" if index == 0 else ",") + _FIELD + encode_basestring(name) + ": "]
        segments += encoded
    if stale:
        tails = _stale_tails(columns[0], stale)
        if tails is None:
            return None
        segments.append(tails)
    segments.append(_RECORD + "}," + _RECORD)
    pieces = _interleaved(_merged(segments), len(questions))
    pieces[0] = around[0] + "[" + _RECORD + pieces[0]
    pieces[-1] = pieces[-1][: -len("," + _RECORD)] + "\n  ]" + around[1]
    return "".join(pieces)


def _columns(questions: Sequence[QuestionResult]) -> list[list[Any]] | None:
    """Each field's values, in question order: read from the results' ``__dict__`` when every
    one is exactly a :class:`QuestionResult` (its fields live there and no class attribute
    shadows them: what ``getattr`` returns, 20 % faster), else by ``getattr``. None when a
    field is missing (the records' path then raises as it always has)."""
    try:
        if set(map(type, questions)) == {QuestionResult}:
            values = list(map(vars, questions))
            return [list(map(itemgetter(name), values)) for name in FIELDS]
        return [list(map(attrgetter(name), questions)) for name in FIELDS]
    except (KeyError, AttributeError):
        return None


def _merged(segments: list[Segment]) -> list[Segment]:
    """Consecutive constant strings as one (fewer pieces to interleave)."""
    merged: list[Segment] = []
    for segment in segments:
        if isinstance(segment, str) and merged and isinstance(merged[-1], str):
            merged[-1] += segment
        else:
            merged.append(segment)
    return merged


def _interleaved(segments: list[Segment], count: int) -> list[str]:
    """The pieces of ``count`` records, record after record, placed a segment at a time."""
    width = len(segments)
    pieces = [""] * (width * count)
    for index, segment in enumerate(segments):
        pieces[index::width] = [segment] * count if isinstance(segment, str) else segment
    return pieces


def _form_texts(forms: list[Any]) -> list[Any]:
    """``str()`` of each form, as the contract has it: a member's shared value when every one is
    a :class:`QuestionForm` member (no string made per question)."""
    if set(map(type, forms)) == {QuestionForm}:
        return list(map(_FORM_TEXT.__getitem__, forms))
    return list(map(str, forms))


_FORM_TEXT = {form: str(form) for form in QuestionForm}


def _scalars(column: list[Any]) -> list[Segment] | None:
    """A column of plain scalars as segments; None when a value is anything else."""
    try:  # strings alone: join refuses anything else (a str subclass's text is json's too)
        if not _escaped("".join(column)):
            return ['"', column, '"']
    except TypeError:
        pass
    kinds = set(map(type, column))
    if kinds == {type(None)}:
        return ["null"]
    if kinds == {bool}:  # exact bools: True and False alone (1 == True does not get here)
        return [list(map(_BOOLS.__getitem__, column))]
    tokens = _tokens(column, kinds)
    return None if tokens is None else [tokens]


def _tokens(column: list[Any], kinds: set[type]) -> list[str] | None:
    """Each value's JSON text (see the module docstring); None when one is not a plain scalar."""
    if not kinds <= _PLAIN:
        return None
    if float in kinds:
        tokens = _orjson_floats(column, kinds)
        if tokens is not None:
            return tokens
    elif kinds <= _MEMOISABLE[0] or kinds <= _MEMOISABLE[1]:
        distinct = set(column)
        if len(distinct) * 8 <= len(column):  # few values (classes, ranks): each written once
            scalars = _SCALARS
            table = {value: scalars[type(value)](value) for value in distinct}
            return list(map(table.__getitem__, column))
    tokens = json.dumps(column, ensure_ascii=False)[1:-1].split(", ")
    if len(tokens) != len(column):  # a value's text holds ", ": one at a time
        scalars = _SCALARS
        tokens = [scalars[type(value)](value) for value in column]
    return tokens


def _orjson_floats(column: list[Any], kinds: set[type]) -> list[str] | None:
    """orjson's texts of a column of floats (and None), when it writes each as json does."""
    dumps = _orjson_indent()
    if dumps is None or not kinds <= {float, type(None)} or not _floats_alike(column):
        return None
    tokens = dumps(column).decode()[len("[\n  ") : -len("\n]")].split(",\n  ")
    return tokens if len(tokens) == len(column) else None


def _floats_alike(column: list[float | None]) -> bool:
    """:func:`retrieval_eval.reports.json_text._written_alike` for a flat column of floats and None, in
    fewer passes: None and zeros (falsy) are written alike; every other magnitude must be finite
    (a NaN or an infinity makes the sum so; a sum that overflows refuses finite values too, which
    only costs speed) and at least 1e-4."""
    magnitudes = list(map(abs, filter(None, column)))
    return not magnitudes or (isfinite(sum(magnitudes)) and min(magnitudes) >= _LEAST_FIXED)


def _lists(column: list[Any]) -> list[Segment] | None:
    """A column of lists of plain scalars (``retrieved``) as segments; None otherwise."""
    if set(map(type, column)) != {list}:
        return None
    texts = _plain_string_lists(column)
    if texts is not None:
        return [_OPEN_LIST + '"', texts, '"' + _CLOSE_LIST]
    items = list(chain.from_iterable(column))
    if not items:
        return ["[]"]
    tokens = _tokens(items, set(map(type, items)))
    if tokens is None:
        return None
    rest = iter(tokens)
    joined = map(("," + _ITEM).join, map(islice, repeat(rest), map(len, column)))
    # an item's text is never empty: an empty join is an empty list
    return [[_OPEN_LIST + text + _CLOSE_LIST if text else "[]" for text in joined]]


_ITEMS = '",' + _ITEM + '"'  # between two strings of a list: 2 quotes and a newline escaped


def _plain_string_lists(column: list[list[Any]]) -> list[str] | None:
    """Each list's strings joined by :data:`_ITEMS`, when no list is empty and no item holds a
    character JSON escapes; None otherwise.

    One pass over the items (they are scattered in memory: each pass costs), then one check of
    the joined text: the characters json escapes in it are the separators' two quotes and
    newline, no more. ``join`` refuses what is not a str; a str subclass's text is what json
    writes for it too.
    """
    lengths = list(map(len, column))
    if not min(lengths):
        return None
    try:
        texts = list(map(_ITEMS.join, column))
    except TypeError:
        return None
    separators = sum(lengths) - len(column)
    return texts if _escaped("".join(texts)) == 3 * separators else None


def _escaped(text: str) -> int:
    """How many characters of ``text`` JSON escapes (json's ``ESCAPE``: ``"``, ``\\``, below
    U+0020), counted on its UTF-8 bytes at C speed (3 times faster than the regular expression):
    every other character encodes to other bytes (lone surrogates too, with surrogatepass)."""
    data = text.encode("utf-8", "surrogatepass")
    return len(data) - len(data.translate(None, _ESCAPED_BYTES))


_ESCAPED_BYTES = bytes(range(0x20)) + b'"\\'
_BOOLS = {True: "true", False: "false"}


def _stale_tails(ids: list[Any], stale: dict[str, list[str]]) -> list[str] | None:
    """What follows ``error`` in each record: nothing, or a stale question's two fields."""
    dead = _lists(list(stale.values()))
    if dead is None:
        return None
    head = "," + _FIELD + '"stale_label": true,' + _FIELD + '"dead_ids": '
    pieces = _interleaved([head, *dead], len(stale))
    texts = map("".join, zip(*[iter(pieces)] * (1 + len(dead)), strict=True))
    tails = dict(zip(stale, texts, strict=True))
    return list(map(tails.get, ids, repeat("")))

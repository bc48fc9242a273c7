"""Building the questions of an ordinary set without pydantic's per-row validation.

``GoldenQuestion.model_validate`` costs ~5 µs a row on the benchmark machine, five Python
validators included: ~105 ms of loading a 20,000-question set. :func:`ordinary_questions`
proves instead, row by row with a few C-level string operations, that EVERY row is one the
validators accept, and builds the same models (same field values and types, same
``model_fields_set``) directly: ~65 ms, of which building the objects is ~30. The questions
share one ``model_fields_set`` per combination of keys, as :meth:`QuestionResult.trusted`
results do: pydantic copies it before adding to it (``model_copy``) and a frozen model never
assigns. (Passes over whole columns were slower: each pass touches 20,000 scattered dicts
again.) Whenever it cannot prove that, it returns None and the caller validates the rows as
before, so every problem a set has is still reported by the validators, with their messages,
in their order.

A row is ordinary when it is a ``dict`` whose keys are all fields, among them ``id``,
``question`` and ``form``, all of type ``str``, and (types exact: a subclass is not ordinary,
but for the items of a target list, which ``str.strip`` turns into ``str`` as the validator's
does):

- ``id``: a ``str``, not empty, equal to its ``strip()``, printable (``str.isprintable``:
  no control character, but also no tab or no-break space, which the validator would accept;
  such a set takes the slow path);
- ``question``: a ``str`` not blank, with no lone surrogate; stored stripped, as the validator
  does;
- ``form``: a ``str`` whose ``strip().lower()`` is a form's value (the validator's own rule);
- ``expected_document_ids``: absent, None, or a ``list``/``tuple`` of ``str``, each not blank
  once stripped, none twice once stripped, all printable as given; stored as a tuple of the
  stripped ids;
- ``hard_class``: absent, None, or a ``str`` not blank, with no lone surrogate; stored stripped;
- ``answer_gist``: absent, None, or a ``str`` with no lone surrogate, stored as is;

and the set has at least one row and no question id twice. One row that is not ordinary sends
the whole set to the slow path: a set with a problem is an error, and errors need no speed.
"""

from __future__ import annotations

from typing import Any

from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.golden.models import GoldenQuestion
from retrieval_eval.safety.surrogates import lone_surrogate
from retrieval_eval.store.trusted import assembled

_FIELDS = frozenset(GoldenQuestion.model_fields)
_FORMS: dict[str, QuestionForm] = {form.value: form for form in QuestionForm}


class _NotOrdinary(Exception):
    """A row the fast path does not vouch for: the whole set takes the validators' path."""


def ordinary_questions(rows: Any) -> list[GoldenQuestion] | None:
    """The validated questions of ``rows`` when every row is ordinary (see above), else None."""
    if type(rows) is not list or not rows:
        return None
    seen: set[str] = set()
    fields_sets: dict[tuple[str, ...], set[str]] = {}
    try:
        return [_question(row, seen, fields_sets) for row in rows]
    except (_NotOrdinary, KeyError, TypeError):  # TypeError: an item of a list is no text
        return None


def _question(
    row: Any, seen: set[str], fields_sets: dict[tuple[str, ...], set[str]]
) -> GoldenQuestion:
    if type(row) is not dict:
        raise _NotOrdinary
    keys = tuple(row)
    fields_set = fields_sets.get(keys) or fields_sets.setdefault(keys, _fields_set(keys))
    qid, text = row["id"], row["question"]  # KeyError: a required field is missing
    if type(qid) is not str or type(text) is not str:
        raise _NotOrdinary
    # what _plain_id returns unchanged (isprintable also refuses a tab or a no-break space,
    # which it would accept), and no id twice
    if not qid or qid.strip() != qid or not qid.isprintable() or qid in seen:
        raise _NotOrdinary
    seen.add(qid)
    text = text.strip()  # _not_blank
    # isascii (O(1)) before the call: lone_surrogate checks it too, but this runs per row
    if not text or (not text.isascii() and lone_surrogate(text)):
        raise _NotOrdinary
    form = row["form"]
    if type(form) is not str:
        raise _NotOrdinary
    # _known_form: the exact value, else the stripped lower-cased one
    form = _FORMS.get(form) or _FORMS.get(form.strip().lower())
    if form is None:
        raise _NotOrdinary
    targets = row.get("expected_document_ids")
    targets = () if targets is None else _targets(targets)
    hard_class = row.get("hard_class")
    if hard_class is not None and (
        type(hard_class) is not str or not (hard_class := hard_class.strip())
    ):
        raise _NotOrdinary  # _class_not_blank
    gist = row.get("answer_gist")
    if gist is not None and type(gist) is not str:
        raise _NotOrdinary
    # _text: no lone surrogate (ids and targets: isprintable refused them already)
    if (hard_class and not hard_class.isascii() and lone_surrogate(hard_class)) or (
        gist and not gist.isascii() and lone_surrogate(gist)
    ):
        raise _NotOrdinary
    # what model_validate builds: every field in __dict__, in declaration order
    return assembled(
        GoldenQuestion,
        {
            "id": qid,
            "question": text,
            "form": form,
            "expected_document_ids": targets,
            "hard_class": hard_class,
            "answer_gist": gist,
        },
        fields_set,
    )


def _fields_set(keys: tuple[Any, ...]) -> set[str]:
    # the set fields: the keys the row gives (a None given is set, an absent field is not);
    # a key equal to a field's name but of a str subclass would be another set: not ordinary
    if not _FIELDS.issuperset(keys) or any(type(key) is not str for key in keys):
        raise _NotOrdinary
    return set(keys)


def _targets(value: Any) -> tuple[str, ...]:
    # _clean_ids: ids stripped, none empty, none twice, all printable as given (it would
    # accept a tab or a no-break space that strip() removes: not here)
    if type(value) is not list and type(value) is not tuple:
        raise _NotOrdinary
    stripped = tuple(map(str.strip, value))  # TypeError: an item is no str
    if (
        "" in stripped
        or (len(stripped) > 1 and len(set(stripped)) < len(stripped))
        or not "".join(value).isprintable()
    ):
        raise _NotOrdinary
    return stripped

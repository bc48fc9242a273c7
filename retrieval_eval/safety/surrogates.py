"""Lone surrogates: ``str`` values that are not Unicode text.

A JSON or YAML escape may name one half of a surrogate pair (``"\\ud800"``). Python keeps it in a
``str``, but nothing that encodes UTF-8 accepts it: a terminal, a database, a JSON writer, the
labels fingerprint's hash. Let through, such a value would pass ``sets validate`` and crash
``run`` (the fingerprint), the save (an error text) or the JSON report (a retrieved id). So it
is stopped where it enters:

- a set's text fields (ids, question, targets, hard class, gist, name, description, corpus
  revision) refuse it, with the field named (:data:`PROBLEM`);
- a retriever's ranking that holds one is that question's error, a miss, like any other
  ranking that is not a sequence of document id strings;
- an error text (a retriever's exception) keeps it escaped, ``\\ud800``: it is for reading.

Every surrogate in a ``str`` is a lone one: decoders join the two halves of a pair into one
character. ASCII text is cleared in O(1) (``str.isascii``), so the check costs nothing on it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from retrieval_eval.safety.limits import quote

_SURROGATE = re.compile("[\ud800-\udfff]")
PROBLEM = (
    "contains a lone surrogate ({char}), which is not text: write the character itself, or "
    "both halves of its escape (e.g. \\ud83d\\ude00)"
)
# A NUL character is text to Python but to no store: PostgreSQL text never holds one.
NUL_PROBLEM = (
    "holds a NUL character (\\x00), which the result store cannot keep (PostgreSQL text never "
    "holds one): remove it"
)


def lone_surrogate(text: str) -> str | None:
    """The first lone surrogate in ``text``, quoted for a message (``'\\ud800'``), or None."""
    if text.isascii():
        return None
    found = _SURROGATE.search(text)
    return quote(found.group()) if found else None


def has_lone_surrogate(texts: Iterable[str]) -> bool:
    """Whether any of ``texts`` holds a lone surrogate (one C-level pass over them all)."""
    joined = "".join(texts)
    return not joined.isascii() and _SURROGATE.search(joined) is not None


def escaped(text: str) -> str:
    """``text`` with each lone surrogate written as its escape (``\\ud800``); else unchanged."""
    if text.isascii() or _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")

"""Stored text (ids, class names, questions, messages) inside the Markdown reports.

Every Markdown writer (``run``/``show --format markdown`` and the $GITHUB_STEP_SUMMARY headline
in :mod:`retrieval_eval.reports.markdown`, ``sets lint --format markdown``, ``compare --format markdown``)
puts data through :func:`md_text`, so a stored string is shown, never rendered:

- ``&``, ``<`` and ``>`` become HTML entities: GitHub renders a subset of HTML (``<i>``,
  ``<details>``, ``<img>``...), and a set id ``<script>`` must read as text;
- Markdown's specials get a backslash (CommonMark shows any escaped ASCII punctuation as
  itself), so no emphasis, code span, strikethrough, link or table break comes from data:
  ``\\ ` * ~ |`` always; ``_`` unless it sits between two letters or digits (an intraword
  ``_`` never opens or closes emphasis, so ``handbook_bm25`` stays readable); ``]`` when a
  ``(`` or ``[`` follows (no link or image can close: the reports define no link
  references). ``#``, ``!``, ``[`` and the others only matter at a line's start or before
  those, where data never is; the price of the rest is backslashes in the Markdown source;
- a line break (``\\r``, ``\\n``) becomes a space: a cell or a line stays one line.

Text shown verbatim (the verdict's details) goes in a fenced code block instead
(:func:`md_fence`): inside one nothing is rendered, and its fence is longer than any run of
backticks in the text, so no data can close it early.
"""

from __future__ import annotations

import re

_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_SPECIALS = frozenset("\\`*~|")
_BACKTICKS = re.compile(r"`+")


def md_text(text: str) -> str:
    """``text`` as Markdown that renders to exactly ``text`` (line breaks as spaces)."""
    out = []
    last = len(text) - 1
    for i, char in enumerate(text):
        if char in _ENTITIES:
            out.append(_ENTITIES[char])
        elif char in _SPECIALS or (char == "]" and i < last and text[i + 1] in "(["):
            out.append("\\" + char)
        elif char == "_":
            intraword = 0 < i < last and text[i - 1].isalnum() and text[i + 1].isalnum()
            out.append(char if intraword else "\\_")
        elif char in "\r\n":
            out.append(" ")
        else:
            out.append(char)
    return "".join(out)


def md_row(cells: list[str]) -> str:
    """A GitHub table row of data cells, each through :func:`md_text`."""
    return "| " + " | ".join(map(md_text, cells)) + " |"


def md_fence(text: str) -> list[str]:
    """``text`` as a fenced code block whose fence no backtick run in ``text`` can close."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence, text, fence]

"""'Did you mean ...' for an unknown set or retriever name: the closest known names by
:func:`difflib.get_close_matches` (ratio ≥ 0.6, at most three, best first); nothing when none
is close, so a message never guesses wildly.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

from retrieval_eval.safety.limits import quote

_LONGEST = 200


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """``" (did you mean 'a' or 'b'?)"`` to append to a message, or ``""``."""
    if len(name) > _LONGEST:  # difflib's cost grows with both lengths: no guess for a blob
        return ""
    close = difflib.get_close_matches(name, list(known), n=3)
    if not close:
        return ""
    return f" (did you mean {' or '.join(quote(c) for c in close)}?)"

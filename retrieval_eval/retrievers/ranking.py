"""What a retriever's answer must be, and how it becomes a ranking of documents: a sequence of
id strings that are Unicode text (:func:`check_ranking`), collapsed to distinct documents in
first-occurrence order (:func:`collapse`). The scorer and the adapters that map chunks to
documents (``chunked``, the vector stores) share them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.surrogates import has_lone_surrogate, lone_surrogate


def collapse(ranking: Sequence[str]) -> list[str]:
    """Distinct ids in first-occurrence order, empty ids dropped."""
    # dict.fromkeys keeps first occurrences in order
    distinct = dict.fromkeys(ranking)
    distinct.pop("", None)
    return list(distinct)


def check_ranking(value: Any) -> list[str]:
    """Accept a sequence of strings; anything else raises TypeError with what was wrong, and
    an id that is no Unicode text (a lone surrogate, ``retrieval_eval.safety.surrogates``) ValueError."""
    if type(value) is list:  # the common case, checked at C speed: join takes strings only
        try:
            joined = "".join(value)
        except TypeError:
            pass  # the loop below names the position and the type
        else:
            if lone_surrogate(joined) is not None:
                refuse_surrogate(value, "retriever returned")
            return value.copy()
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        hint = " (convert arrays with .tolist())" if hasattr(value, "tolist") else ""
        raise TypeError(
            f"retriever returned {type(value).__name__}, expected a sequence of document id "
            f"strings{hint}"
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise TypeError(
                f"retriever returned {type(item).__name__} at position {index}, expected a "
                "document id string"
            )
    ranking = list(value)
    if has_lone_surrogate(ranking):
        refuse_surrogate(ranking, "retriever returned")
    return ranking


def refuse_surrogate(ranking: Sequence[str], what: str) -> None:
    """Raise ValueError naming the first id of ``ranking`` that is no text, and its position."""
    index, char = next((i, c) for i, doc in enumerate(ranking) if (c := lone_surrogate(doc)))
    raise ValueError(
        f"{what} id {quote(ranking[index])} at position {index}, which is not text: it holds "
        f"a lone surrogate ({char})"
    )

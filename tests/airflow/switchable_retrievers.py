"""A retriever whose behaviour a test switches between runs with ``RE_TEST_MODE``.

``good``: the demo BM25; ``degraded``: the same ranking pushed down by three decoy ids (so top-1
and top-3 collapse); ``broken``: always raises. Same identifier in every mode, so runs compare.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever

CORPUS = Path(__file__).resolve().parents[2] / "examples" / "corpus"


@cache
def _bm25() -> LexicalRetriever:
    return LexicalRetriever("bm25", LexicalOptions(corpus=CORPUS))


def switchable(question: str, limit: int) -> list[str]:
    mode = os.environ.get("RE_TEST_MODE", "good")
    if mode == "broken":
        raise RuntimeError("search backend is down")
    ranking = _bm25().retrieve(question, limit)
    if mode == "degraded":
        ranking = ["decoy/a.md", "decoy/b.md", "decoy/c.md", *ranking]
    return ranking[:limit]

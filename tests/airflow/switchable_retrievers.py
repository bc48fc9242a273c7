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


class Shrinking:
    """The demo BM25 over an index that lost the documents listed in ``RE_DEAD_DOCS`` (comma
    separated): they are neither returned nor known to ``existing_ids``, as after a rebuild that
    dropped them. Its identifier is its import path (set when it is built), the same before and
    after, so the runs compare."""

    @staticmethod
    def _dead() -> set[str]:
        return {d for d in os.environ.get("RE_DEAD_DOCS", "").split(",") if d}

    def retrieve(self, question: str, limit: int) -> list[str]:
        dead = self._dead()
        return [d for d in _bm25().retrieve(question, limit + len(dead)) if d not in dead][:limit]

    def existing_ids(self, ids: list[str]) -> set[str]:
        return _bm25().existing_ids(ids) - self._dead()


class TakesTheStoreAway:
    """The demo BM25, whose first answer takes the result store's PostgreSQL database away
    (renamed, as :class:`helpers.Database` does) when ``RE_TAKE_AWAY`` names it as
    ``ADMIN_URL DATABASE``: the replay task has read its sample by then, so the store is gone
    when the join_batches and compare_and_save tasks start."""

    def retrieve(self, question: str, limit: int) -> list[str]:
        named = os.environ.get("RE_TAKE_AWAY")
        if named:
            from helpers import Database

            admin, name = named.split(" ", 1)
            database = Database(admin, "", name)
            if database.exists():
                database.take_away()
        return _bm25().retrieve(question, limit)

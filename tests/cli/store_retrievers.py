"""Retrievers for the store CLI tests, given as ``cli.store_retrievers:NAME`` import paths.

``switchable`` answers perfectly or not at all depending on ``$STORE_CLI_MODE`` (read at call
time), so one retriever identifier can produce a good run and then a regressed one.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from retrieval_eval.golden.loaders import load_golden_set

DEMO_SET = Path(__file__).resolve().parents[2] / "examples" / "golden" / "handbook.yaml"


@cache
def _answers() -> dict[str, list[str]]:
    return {q.question: list(q.expected_document_ids) for q in load_golden_set(DEMO_SET).questions}


def switchable(question: str, limit: int) -> list[str]:
    mode = os.environ.get("STORE_CLI_MODE", "perfect")
    if mode == "perfect":
        return _answers()[question][:limit]
    if mode == "down":  # every question errors: an invalid run of the same retriever
        raise ConnectionError("search service down")
    return []


def empty(question: str, limit: int) -> list[str]:
    return []


def broken(question: str, limit: int) -> list[str]:
    raise ConnectionError("search service down")


class ClosesBadly:
    """Answers perfectly; its ``close()`` (a pool shutting down) raises."""

    identifier = "closes_badly"

    def retrieve(self, question: str, limit: int) -> list[str]:
        return _answers()[question][:limit]

    def close(self) -> None:
        raise RuntimeError("pool already gone")


class OddLabels:
    """Answers perfectly; its dead-label lookup names its source, or fails, with a lone
    surrogate in the text (as a service's garbled error may)."""

    identifier = "odd_labels"
    existing_ids_source = "index \ud800"

    def retrieve(self, question: str, limit: int) -> list[str]:
        return _answers()[question][:limit]

    def existing_ids(self, ids: list[str]) -> set[str]:
        if os.environ.get("STORE_CLI_MODE") == "lookup_fails":
            raise RuntimeError("lookup failed \udc80 here")
        return set(ids)

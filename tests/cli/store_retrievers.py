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

"""What the vector-store adapter tests share: the skip (a failure in CI) and the checks.

Each store's tests load :mod:`retrievers.vector_corpus` into a real embedded instance and build
the adapter from a config block; :func:`check_rankings`, :func:`check_dead_labels` and
:func:`check_texts` then hold every store to the same answers.
"""

from __future__ import annotations

import importlib.util
import socket
from typing import Any

import pytest
from helpers import required

from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.extras import pip_command
from retrieval_eval.retrievers.registry import RetrieverRegistry

from .vector_corpus import CHUNKS, DOCUMENTS, QUESTIONS

REQUIRE_ENV = "RETRIEVAL_EVAL_REQUIRE_VECTORS"


def require_extra(module: str, extra: str) -> None:
    """Skip unless ``module`` imports; with $RETRIEVAL_EVAL_REQUIRE_VECTORS set, fail instead."""
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if found:
        return
    reason = f"{module} not installed ({pip_command(extra)})"
    if required(REQUIRE_ENV):
        pytest.fail(f"{reason}; ${REQUIRE_ENV} is set, so this is a failure")
    pytest.skip(reason)


def build(spec: dict[str, Any]) -> Any:
    return RetrieverRegistry({"docs": spec}, source="cfg.yaml").build("docs")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def check_rankings(retriever: Any) -> None:
    """Every question finds its document first; a two-chunk document is listed once."""
    for question, document in QUESTIONS.items():
        ranking = retriever.retrieve(question, 5)
        assert ranking[0] == document, (question, ranking)
        assert len(ranking) == len(set(ranking)) <= 5
    if hasattr(retriever, "retrieve_many"):
        assert retriever.retrieve_many(list(QUESTIONS), 1) == [[d] for d in QUESTIONS.values()]
    golden = GoldenQuestionSet(
        identifier="vectors.test",
        questions=[
            GoldenQuestion(id=f"q{i}", question=q, form="match", expected_document_ids=[d])
            for i, (q, d) in enumerate(QUESTIONS.items())
        ],
    )
    result = evaluate(golden, retriever)
    assert result.top1_hit_rate == 1.0
    assert result.error_count == 0, [q.error for q in result.questions]


def check_dead_labels(retriever: Any) -> None:
    assert retriever.existing_ids(["guide.md", "gone.md", "lint.md"]) == {"guide.md", "lint.md"}
    assert retriever.existing_ids([]) == set()
    assert retriever.existing_ids_source


def check_texts(retriever: Any) -> None:
    texts = retriever.document_texts(["guide.md", "billing.md", "gone.md"])
    assert set(texts) == {"guide.md", "billing.md"}
    guide = [text for _, doc, text in CHUNKS if doc == "guide.md"]
    assert sorted(texts["guide.md"].split("\n\n")) == sorted(guide)
    assert texts["billing.md"] == next(t for _, d, t in CHUNKS if d == "billing.md")
    assert set(retriever.document_texts(DOCUMENTS)) == set(DOCUMENTS)

"""Dead labels: which expected ids a retriever no longer knows, and which questions go stale."""

from __future__ import annotations

from collections.abc import Iterable

from retrieval_eval.evaluation.labels import find_dead_labels
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever


def golden(*targets: tuple[str, ...]) -> GoldenQuestionSet:
    questions = tuple(
        GoldenQuestion(id=f"q{n}", question=f"question {n}", form="match", expected_document_ids=t)
        for n, t in enumerate(targets)
    )
    return GoldenQuestionSet(identifier="labels", questions=questions)


class Known:
    """A retriever that knows a fixed set of ids and records what it was asked."""

    identifier = "known"
    existing_ids_source = "test index"

    def __init__(self, known: set[str]) -> None:
        self.known = known
        self.calls: list[list[str]] = []

    def retrieve(self, question: str, limit: int) -> list[str]:
        return []

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        asked = list(ids)
        self.calls.append(asked)
        # answers with an id it was not asked about too: only asked ids may count
        return {i for i in asked if i in self.known} | {"unasked"}


def test_stale_partly_dead_and_empty_targets() -> None:
    labels = golden(("a", "b"), ("a", "gone1"), ("gone1", "gone2"), (), ("gone2",))
    retriever = Known({"a", "b"})
    found = find_dead_labels(labels, retriever)
    assert found.checked and found.source == "test index"
    assert found.dead_ids == ["gone1", "gone2"]
    assert found.stale_questions == ["q2", "q4"]
    assert found.partly_dead == {"q1": ["gone1"]}
    # one call, every distinct expected id once
    assert len(retriever.calls) == 1
    assert sorted(retriever.calls[0]) == ["a", "b", "gone1", "gone2"]
    assert "2 ids no longer in the index" in found.summary()


def test_nothing_dead() -> None:
    found = find_dead_labels(golden(("a",), ()), Known({"a"}))
    assert found.checked and not found.found
    assert found.stale_questions == [] and found.partly_dead == {}


def test_without_the_capability_nothing_is_checked() -> None:
    found = find_dead_labels(golden(("a",)), FunctionRetriever(lambda q, k: [], "f"))
    assert not found.checked
    assert found.dead_ids == [] and found.stale_questions == []
    assert "not checked" in found.summary()


def test_a_set_without_targets_asks_nothing() -> None:
    retriever = Known(set())
    found = find_dead_labels(golden((), ()), retriever)
    assert found.checked and not found.found and retriever.calls == []

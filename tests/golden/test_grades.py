"""Graded labels: ``grades: {doc-id: 0..3}`` beside or instead of ``expected_document_ids``."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.fingerprint import labels_fingerprint
from retrieval_eval.golden.loaders import validate_set_data
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet


def question(**fields: Any) -> GoldenQuestion:
    return GoldenQuestion.model_validate(
        {"id": "q1", "question": "Refunds?", "form": "match", **fields}
    )


def test_expected_ids_mean_grade_one_and_grades_win_over_them() -> None:
    q = question(expected_document_ids=["a", "b"], grades={"b": 0, "c": 3, " d ": 2})
    assert q.relevance == {"a": 1, "b": 0, "c": 3, "d": 2}
    assert q.judged_ids == ("a", "b", "c", "d")
    assert q.targets() == q.targets(1) == ("a", "c", "d")
    assert q.targets(2) == ("c", "d")
    assert q.targets(3) == ("c",)
    assert q.is_graded and not q.is_no_result


def test_grades_alone_and_no_grades() -> None:
    assert question(grades={"a": 2}).targets() == ("a",)
    plain = question(expected_document_ids=["a"])
    assert plain.grades is None and not plain.is_graded
    assert plain.targets() == ("a",) and plain.targets(2) == ()
    assert question(grades={}).grades is None  # an empty mapping grades nothing


def test_a_question_judged_only_not_relevant_has_no_target() -> None:
    q = question(grades={"a": 0})
    assert q.judged_ids == ("a",) and q.targets() == () and q.is_no_result


@pytest.mark.parametrize(
    "grades,message",
    [
        ({"a": 4}, "field 'grades': the grade of document 'a' must be an integer 0-3"),
        ({"a": -1}, "the grade of document 'a' must be an integer 0-3"),
        ({"a": True}, "not True"),
        ({"a": "2"}, "not '2'"),
        ({"a": 2.0}, "not 2.0"),
        ({"": 1}, "field 'grades': contains an empty document id"),
        ({"a": 1, " a": 2}, "grades document id 'a' twice (ids are stripped)"),
        ({"a\x01": 1}, "document id 'a\\x01' contains a control character"),
        ({1: 2}, "document id 1 must be text, not int (quote it)"),
        (["a"], "must be a mapping of document id to grade, e.g. {doc-1: 2}, not list"),
    ],
)
def test_bad_grades_are_named_with_the_question_and_field(grades: Any, message: str) -> None:
    data = {
        "identifier": "s",
        "questions": [{"id": "q1", "question": "x", "form": "gap", "grades": grades}],
    }
    with pytest.raises(GoldenSetError) as caught:
        validate_set_data(data, source="set.yaml")
    (problem,) = caught.value.problems
    assert problem.startswith("set.yaml (set 's'): question 'q1' (#1): ")
    assert message in problem


def _fingerprint(**fields: Any) -> str:
    data = {
        "identifier": "s",
        "questions": [{"id": "q1", "question": "x", "form": "gap", **fields}],
    }
    return labels_fingerprint(GoldenQuestionSet.model_validate(data))


def test_the_fingerprint_covers_grades_and_keeps_ungraded_sets() -> None:
    plain = _fingerprint(expected_document_ids=["a", "b"])
    # grade 1 everywhere is what the list already says: the same labels, the same fingerprint
    assert _fingerprint(grades={"a": 1, "b": 1}) == plain
    assert _fingerprint(expected_document_ids=["a"], grades={"b": 1}) == plain
    regraded = _fingerprint(expected_document_ids=["a", "b"], grades={"b": 2})
    assert regraded != plain
    assert _fingerprint(grades={"a": 1, "b": 3}) != regraded
    # a judged-not-relevant document is a label too
    assert _fingerprint(expected_document_ids=["a", "b"], grades={"c": 0}) not in (plain, regraded)

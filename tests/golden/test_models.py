"""The golden question models: forms, field cleaning, and the set-level rules."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet, QuestionForm


def question(**fields: object) -> GoldenQuestion:
    base: dict[str, object] = {"id": "q1", "question": "How?", "form": "match"}
    return GoldenQuestion.model_validate({**base, **fields})


@pytest.mark.parametrize("raw", ["match", "MATCH", "Match", " match "])
def test_form_parses_case_insensitively(raw: str) -> None:
    assert question(form=raw).form is QuestionForm.MATCH


def test_form_gap_and_unknown_form() -> None:
    assert question(form="Gap").form is QuestionForm.GAP
    with pytest.raises(ValidationError, match="form"):
        question(form="fuzzy")


@pytest.mark.parametrize("field", ["id", "question"])
@pytest.mark.parametrize("value", ["", "   ", "\t\n"])
def test_blank_id_or_text_is_rejected(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match="must not be empty or whitespace only"):
        question(**{field: value})


def test_id_and_text_are_stripped() -> None:
    q = question(id="  q7 ", question=" Where?  ")
    assert (q.id, q.question) == ("q7", "Where?")


def test_expected_ids_empty_id_and_duplicate_rejected() -> None:
    with pytest.raises(ValidationError, match="empty document id"):
        question(expected_document_ids=["a", " "])
    with pytest.raises(ValidationError, match="'a' twice"):
        question(expected_document_ids=["a", "b", "a"])


def test_expected_ids_single_string_is_rejected_not_split_into_characters() -> None:
    with pytest.raises(ValidationError, match="not a single string"):
        question(expected_document_ids="doc-1")


@pytest.mark.parametrize("item", [None, 7])
def test_an_expected_id_that_is_no_string_is_named_not_a_crash(item: object) -> None:
    """A null in the list (``[~]`` in YAML) is an item that is no string too (fuzz-found)."""
    with pytest.raises(ValidationError, match=f"not of {type(item).__name__}"):
        question(expected_document_ids=[item])


def test_no_expected_ids_means_no_result_question() -> None:
    assert question().is_no_result
    assert question(expected_document_ids=None).is_no_result
    assert not question(expected_document_ids=["d"]).is_no_result


def test_hard_class_empty_rejected_and_optional() -> None:
    with pytest.raises(ValidationError, match="must not be an empty string"):
        question(hard_class="  ")
    assert question().hard_class is None
    assert question(hard_class=" near-duplicate ").hard_class == "near-duplicate"


def test_unknown_question_field_rejected() -> None:
    with pytest.raises(ValidationError, match="expected_docs"):
        question(expected_docs=["a"])


@pytest.mark.parametrize("identifier", ["handbook", "handbook.demo", "a_1.b2.c_3", "x"])
def test_valid_identifiers(identifier: str) -> None:
    assert GoldenQuestionSet(identifier=identifier, questions=(question(),)).identifier == (
        identifier
    )


@pytest.mark.parametrize(
    "identifier", ["Handbook", "hand book", "hand-book", ".demo", "demo.", "a..b", ""]
)
def test_invalid_identifiers(identifier: str) -> None:
    with pytest.raises(ValidationError, match="not a valid identifier"):
        GoldenQuestionSet(identifier=identifier, questions=(question(),))


def test_set_rejects_empty_questions_and_duplicate_ids() -> None:
    with pytest.raises(ValidationError, match="has no questions"):
        GoldenQuestionSet(identifier="s", questions=())
    with pytest.raises(ValidationError, match="duplicate question id 'q1'"):
        GoldenQuestionSet(identifier="s", questions=(question(), question(question="Other?")))


def test_set_fingerprint_and_len() -> None:
    s = GoldenQuestionSet(identifier="s", questions=(question(), question(id="q2")))
    assert len(s) == 2
    assert len(s.fingerprint) == 64


# --- ids: stripped, compared stripped, plain text only ------------------------------------------


def test_expected_ids_are_stripped_like_question_ids() -> None:
    assert question(expected_document_ids=[" a ", "b\t"]).expected_document_ids == ("a", "b")


def test_expected_ids_differing_only_by_surrounding_whitespace_are_duplicates() -> None:
    with pytest.raises(ValidationError, match="'a' twice"):
        question(expected_document_ids=["a", " a"])


def test_question_ids_differing_only_by_surrounding_whitespace_are_duplicates() -> None:
    with pytest.raises(ValidationError, match="duplicate question id 'q1'"):
        GoldenQuestionSet(identifier="s", questions=(question(id="q1"), question(id=" q1 ")))


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x1f", "\x7f", "\n", "\t"])
def test_ids_with_control_characters_are_refused(char: str) -> None:
    with pytest.raises(ValidationError, match=r"id\n.*control character"):
        question(id=f"q{char}1")
    with pytest.raises(ValidationError, match=r"expected_document_ids\n.*control character"):
        question(expected_document_ids=["a", f"doc{char}1"])

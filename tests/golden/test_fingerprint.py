"""The labels fingerprint: blind to order and gists, sensitive to every label."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval_eval.golden.fingerprint import labels_fingerprint
from retrieval_eval.golden.models import GoldenQuestionSet

QUESTIONS: list[dict[str, Any]] = [
    {
        "id": "q1",
        "question": "How do refunds work?",
        "form": "match",
        "expected_document_ids": ["refunds.md", "refunds-eu.md"],
        "hard_class": "near-duplicate",
        "answer_gist": "30 days",
    },
    {"id": "q2", "question": "Forgot password", "form": "gap", "expected_document_ids": ["pw.md"]},
    {"id": "q3", "question": "Weather?", "form": "gap"},
]


def fingerprint(questions: list[dict[str, Any]], **header: Any) -> str:
    data = {"identifier": "s", **header, "questions": questions}
    return labels_fingerprint(GoldenQuestionSet.model_validate(data))


def edited(index: int, **changes: Any) -> list[dict[str, Any]]:
    copy = [dict(q) for q in QUESTIONS]
    copy[index].update(changes)
    return copy


BASE = fingerprint(QUESTIONS)


def test_is_a_pinned_sha256_hex() -> None:
    # pinned: changing the recipe would silently make every stored run incomparable
    assert BASE == "3537caf8a040f2367ab0aefebead39d864d743c3fc5a8cb80881fa15b9b7b54d"
    assert fingerprint(QUESTIONS) == BASE


def test_set_identifier_does_not_matter() -> None:
    other = GoldenQuestionSet.model_validate({"identifier": "other.id", "questions": QUESTIONS})
    assert labels_fingerprint(other) == BASE == other.fingerprint


def test_question_order_does_not_matter() -> None:
    assert fingerprint(list(reversed(QUESTIONS))) == BASE


def test_target_order_does_not_matter() -> None:
    assert fingerprint(edited(0, expected_document_ids=["refunds-eu.md", "refunds.md"])) == BASE


def test_gist_and_set_header_do_not_matter() -> None:
    assert fingerprint(edited(0, answer_gist="thirty days")) == BASE
    assert fingerprint(edited(0, answer_gist=None)) == BASE
    assert fingerprint(QUESTIONS, name="renamed", description="d", corpus_revision="r9") == BASE


def test_form_case_in_the_file_does_not_matter() -> None:
    assert fingerprint(edited(1, form="GAP")) == BASE


@pytest.mark.parametrize(
    "index,changes",
    [
        (0, {"id": "q1b"}),
        (0, {"question": "How do refunds work now?"}),
        (0, {"form": "gap"}),
        (0, {"hard_class": "general"}),
        (0, {"hard_class": None}),
        (0, {"expected_document_ids": ["refunds.md"]}),
        (1, {"expected_document_ids": ["pw.md", "extra.md"]}),
        (2, {"expected_document_ids": ["weather.md"]}),
    ],
)
def test_every_label_edit_changes_it(index: int, changes: dict[str, Any]) -> None:
    assert fingerprint(edited(index, **changes)) != BASE


def test_adding_or_removing_a_question_changes_it() -> None:
    assert fingerprint(QUESTIONS[:2]) != BASE
    extra = {"id": "q4", "question": "More?", "form": "match"}
    assert fingerprint([*QUESTIONS, extra]) != BASE


def test_fingerprint_is_computed_once_per_set(monkeypatch: pytest.MonkeyPatch) -> None:
    import retrieval_eval.golden.fingerprint as module

    calls: list[int] = []
    real = module.labels_fingerprint
    monkeypatch.setattr(module, "labels_fingerprint", lambda s: calls.append(1) or real(s))
    golden = GoldenQuestionSet.model_validate({"identifier": "s", "questions": QUESTIONS})
    assert golden.fingerprint == golden.fingerprint == BASE
    assert len(calls) == 1


def test_a_copy_with_other_labels_gets_its_own_fingerprint() -> None:
    golden = GoldenQuestionSet.model_validate({"identifier": "s", "questions": QUESTIONS})
    assert golden.fingerprint == BASE
    questions = list(golden.questions)
    questions[0] = questions[0].model_copy(update={"expected_document_ids": ["other.md"]})
    changed = golden.model_copy(update={"questions": tuple(questions)})
    assert changed.fingerprint != BASE
    assert changed.fingerprint == labels_fingerprint(changed)
    assert golden.model_copy().fingerprint == BASE


def _recipe(golden_set: GoldenQuestionSet) -> str:
    """The recipe as first written (lists, ``form.value``): stored runs carry its hashes."""
    import hashlib
    import json

    rows = sorted(
        [q.id, q.question, q.form.value, q.hard_class, sorted(q.expected_document_ids)]
        for q in golden_set.questions
    )
    payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_TEXT = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cc", "Cs")), min_size=1
).filter(lambda text: text.strip() == text)


@settings(max_examples=200, derandomize=True, deadline=None)
@given(
    st.lists(
        st.tuples(
            _TEXT,
            st.sampled_from(["match", "gap"]),
            st.none() | _TEXT,
            st.lists(_TEXT, max_size=4, unique=True),
        ),
        min_size=1,
        max_size=6,
        unique_by=lambda row: row[0],
    )
)
def test_any_set_hashes_as_the_first_recipe(
    rows: list[tuple[str, str, str | None, list[str]]],
) -> None:
    questions = [
        {
            "id": qid,
            "question": f"q {qid}",
            "form": form,
            "hard_class": hard,
            "expected_document_ids": ids,
        }
        for qid, form, hard, ids in rows
    ]
    golden_set = GoldenQuestionSet.model_validate({"identifier": "s", "questions": questions})
    assert labels_fingerprint(golden_set) == _recipe(golden_set)

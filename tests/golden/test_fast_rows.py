"""The fast path for ordinary rows (golden/fast_rows.py) gives exactly what the validators give.

Random sets, mostly ordinary rows with one subtle change here and there (whitespace, control
characters, tabs, no-break spaces, odd-case forms, duplicates, wrong types, extra or missing
keys), are validated twice: as loaded, and with the fast path switched off. The outcomes must
be identical: the same questions, field by field with their types and set fields, or the same
problems in the same order. Seeded (derandomized): a failure reproduces.
"""

from __future__ import annotations

import copy
import gc
import json
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden import loaders
from retrieval_eval.golden.fast_rows import ordinary_questions
from retrieval_eval.golden.loaders import load_golden_set, validate_set_data
from retrieval_eval.golden.models import GoldenQuestion

EQUIVALENCE = settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# the characters the validators treat specially: spaces, tabs, no-break spaces, line breaks,
# NUL and DEL, a file separator (whitespace to str.strip), a lone surrogate, a zero-width space
ODD = " \t\xa0\n\x00\x7f\x1c\ud800\u200b"
TEXT = st.text(alphabet="ab" + ODD, max_size=4)
PLAIN = st.text(alphabet="abcd_1.", min_size=1, max_size=4)
JUNK = st.one_of(
    st.none(),
    st.integers(-2, 2),
    st.booleans(),
    TEXT,
    st.lists(st.integers(0, 2), max_size=2),
    st.dictionaries(PLAIN, st.integers(0, 2), max_size=2),
)
FORMS = st.sampled_from(["match", "gap", "Match", " gap ", "GAP\t", "mat", "", "gap\x00"])


def _with_odd(plain: st.SearchStrategy[str]) -> st.SearchStrategy[Any]:
    # mostly ordinary, sometimes subtly not
    return st.one_of(plain, plain, plain, TEXT, JUNK, st.builds(lambda p, o: p + o, plain, TEXT))


TARGET_LISTS = st.one_of(
    st.lists(PLAIN, max_size=3),
    st.lists(_with_odd(PLAIN), max_size=3),
    st.tuples(PLAIN, PLAIN),
    st.lists(st.one_of(PLAIN, st.integers(0, 2), st.none()), max_size=3),
    JUNK,
)


@st.composite
def rows(draw: st.DrawFn) -> Any:
    if draw(st.integers(0, 30)) == 0:
        return draw(JUNK)  # no mapping at all
    row: dict[Any, Any] = {
        "id": draw(_with_odd(PLAIN)),
        "question": draw(_with_odd(st.text(alphabet="ab ?", min_size=1, max_size=6))),
        "form": draw(st.one_of(FORMS, FORMS, FORMS, JUNK)),
    }
    for field, values in (
        ("expected_document_ids", TARGET_LISTS),
        ("hard_class", _with_odd(PLAIN)),
        ("answer_gist", _with_odd(TEXT)),
    ):
        if draw(st.booleans()):
            row[field] = draw(values)
    if draw(st.integers(0, 10)) == 0:
        row.pop(draw(st.sampled_from(sorted(row))))  # a missing key
    if draw(st.integers(0, 10)) == 0:
        row[draw(st.sampled_from(["extra", 1, None, "ID"]))] = draw(JUNK)  # an unknown key
    return dict(draw(st.permutations(list(row.items()))))  # keys in any order


SETS = st.lists(rows(), min_size=0, max_size=6)


class Key(str):
    """A key equal to a field's name, of another type."""


ORDINARY_ROWS = st.builds(
    lambda i, question, form, targets, hard_class, gist: {
        "id": f"q{i}",
        "question": question,
        "form": form,
        "expected_document_ids": targets,
        "hard_class": hard_class,
        "answer_gist": gist,
    },
    st.integers(0, 3),
    st.text(alphabet="ab ?", min_size=1, max_size=6).filter(str.strip),
    st.sampled_from(["match", "gap", " Gap", "MATCH "]),
    st.one_of(st.none(), st.lists(PLAIN, max_size=3, unique=True)),
    st.one_of(st.none(), PLAIN),
    st.one_of(st.none(), TEXT),
)
# one subtle change to one ordinary row: the fast path must see it (or agree with it)
CHANGES = st.one_of(
    st.tuples(st.sampled_from(["id", "question", "form", "hard_class", "answer_gist"]), TEXT),
    st.tuples(st.just("expected_document_ids"), st.lists(_with_odd(PLAIN), max_size=3)),
    st.tuples(st.sampled_from(["id", "question", "form", "expected_document_ids"]), JUNK),
    st.tuples(st.sampled_from(["extra", "ID", Key("hard_class")]), st.none()),
)


@st.composite
def nearly_ordinary_sets(draw: st.DrawFn) -> list[Any]:
    questions = draw(st.lists(ORDINARY_ROWS, min_size=1, max_size=5))
    if draw(st.booleans()):
        row = questions[draw(st.integers(0, len(questions) - 1))]
        key, value = draw(CHANGES)
        if draw(st.integers(0, 5)) == 0:
            row.pop(key, None)  # a missing key
        else:
            row[key] = value
    return questions


def outcome(questions: Any, fast: bool) -> tuple[str, Any]:
    """What validating a set of these rows gives: its questions, exactly, or its problems."""
    data = {"identifier": "fuzz.set", "name": "fuzz", "questions": copy.deepcopy(questions)}
    switch = mock.patch.object(loaders, "ordinary_questions", lambda rows: None)
    try:
        if fast:
            golden_set = validate_set_data(data, source="fuzz.jsonl")
        else:
            with switch:
                golden_set = validate_set_data(data, source="fuzz.jsonl")
    except GoldenSetError as exc:
        return "problems", exc.problems
    return "set", exactly(golden_set)


def fingerprint(golden_set: Any) -> str:
    try:
        return str(golden_set.fingerprint)
    except UnicodeEncodeError:  # a lone surrogate in a question: no fingerprint either way
        return "unencodable"


def exactly(golden_set: Any) -> Any:
    # equality alone would take a list for a tuple and a str subclass for a str
    return (
        golden_set,
        fingerprint(golden_set),
        golden_set.model_fields_set,
        [
            (
                [(name, type(value), value) for name, value in vars(q).items()],
                [type(item) for item in q.expected_document_ids],
                q.model_fields_set,
                q.__pydantic_extra__,
                q.__pydantic_private__,
            )
            for q in golden_set.questions
        ],
    )


@EQUIVALENCE
@given(SETS)
def test_the_fast_path_gives_what_the_validators_give(questions: Any) -> None:
    assert outcome(questions, fast=True) == outcome(questions, fast=False)


@EQUIVALENCE
@given(nearly_ordinary_sets())
def test_one_change_to_an_ordinary_set_gives_what_the_validators_give(questions: Any) -> None:
    assert outcome(questions, fast=True) == outcome(questions, fast=False)


@EQUIVALENCE
@given(st.lists(rows(), min_size=1, max_size=6))
def test_a_row_the_fast_path_accepts_is_one_the_validators_accept_unchanged(rows: Any) -> None:
    # each row alone: a set of one ordinary row is the same set either way
    fast = ordinary_questions(rows)
    if fast is not None:
        assert fast == [GoldenQuestion.model_validate(row) for row in rows]


ORDINARY = [
    {"id": "q1", "question": " Where? ", "form": "match", "expected_document_ids": ["d1", "d2"]},
    {"id": "q2", "question": "What", "form": " GAP", "expected_document_ids": [" d1 "]},
    {"id": "q3", "question": "Who", "form": "gap", "expected_document_ids": None},
    {"id": "q4", "question": "How", "form": "gap", "hard_class": " negation ", "answer_gist": None},
    {"id": "q5", "question": "Why", "form": "match", "expected_document_ids": []},
]


def test_an_ordinary_set_takes_the_fast_path() -> None:
    # the equivalence holds trivially if a guard always falls back: the fast path must be taken
    fast = ordinary_questions(copy.deepcopy(ORDINARY))
    assert fast is not None
    assert fast == [GoldenQuestion.model_validate(row) for row in ORDINARY]
    assert outcome(ORDINARY, fast=True) == outcome(ORDINARY, fast=False)


def test_loading_an_ordinary_file_validates_no_row_with_pydantic(tmp_path: Path) -> None:
    path = tmp_path / "set.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in ORDINARY), encoding="utf-8")
    with mock.patch.object(GoldenQuestion, "model_validate", side_effect=AssertionError):
        golden_set = load_golden_set(path)
    assert [q.id for q in golden_set.questions] == ["q1", "q2", "q3", "q4", "q5"]
    assert golden_set.questions[1].expected_document_ids == ("d1",)
    assert golden_set.questions[3].hard_class == "negation"


@pytest.mark.parametrize(
    "change",
    [
        {"id": " q1"},  # stripped by the validators: not vouched for
        {"id": "q\t1"},  # accepted by the validators, not printable: not vouched for
        {"id": "q2"},  # a duplicate id
        {"form": "Matches"},
        {"question": " "},
        {"expected_document_ids": ["d1", " d1"]},
        {"expected_document_ids": ["d1", " "]},
        {"expected_document_ids": ["d\x001"]},
        {Key("hard_class"): "a"},
        {"expected_document_ids": ["d1", 2]},
        {"expected_document_ids": "d1"},
        {"expected_document_ids": {"d1": 1}},  # iterable, its keys ids: still no list
        {"expected_document_ids": {"d1"}},
        {"hard_class": ""},
        {"answer_gist": 3},
        {"extra": 1},
    ],
)
def test_a_row_out_of_the_ordinary_sends_the_set_to_the_validators(change: dict[str, Any]) -> None:
    rows = copy.deepcopy(ORDINARY)
    rows[0].update(change)
    assert ordinary_questions(rows) is None
    assert outcome(rows, fast=True) == outcome(rows, fast=False)


def test_a_load_leaves_no_young_objects_for_the_collector(tmp_path: Path) -> None:
    # promotion (golden/promotion.py): the questions loaded are not walked by a young collection
    path = tmp_path / "set.jsonl"
    rows = [{"id": f"q{i}", "question": "?", "form": "gap"} for i in range(3000)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    if gc.get_freeze_count():
        pytest.skip("something froze objects: the loader leaves the collector alone")
    gc.collect()
    golden_set = load_golden_set(path)
    young = gc.get_objects(generation=0) + gc.get_objects(generation=1)
    assert not any(q is golden_set.questions[0] for q in young)
    assert gc.get_freeze_count() == 0


def test_target_ids_of_a_str_subclass_come_out_as_str_both_ways() -> None:
    rows = [{"id": "q1", "question": "?", "form": "gap", "expected_document_ids": [Key(" d1")]}]
    fast = ordinary_questions(copy.deepcopy(rows))
    assert fast is not None
    assert [type(target) for target in fast[0].expected_document_ids] == [str]
    assert outcome(rows, fast=True) == outcome(rows, fast=False)

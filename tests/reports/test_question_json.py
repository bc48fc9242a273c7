"""The JSON report's questions written column by column (``question_json``) are what
``json.dumps(contract, indent=2, ensure_ascii=False)`` writes, byte for byte, and the report
falls back to the contract's records whenever a value is not plain."""

from __future__ import annotations

import enum
import json
import random
from typing import Any

import pytest
from test_json_text import TEXTS as JSON_TEXTS

from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import (
    QuestionResult,
    RunResult,
    RunSettings,
    _question_contract,
    _questions_contract,
)
from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.reports import json_text, question_json
from retrieval_eval.reports.json import render_json
from retrieval_eval.reports.question_json import FIELDS, questions_json

# strings json escapes (test_json_text's), and ones the column writer might be split at: its
# separators, a value's own ", ", a lone surrogate, a string spelling null
TEXTS = [*JSON_TEXTS, "a, b", '",\n        "', "\ud800", "null"]


class Rank(enum.IntEnum):
    ONE = 1


def _text(rng: random.Random) -> str:
    return rng.choice(TEXTS) + "".join(
        chr(rng.randrange(0x110000)) for _ in range(rng.randrange(2))
    )


def _float(rng: random.Random) -> float:
    return rng.choice(
        [0.0, -0.0, 1e-4, 1e-05, 5e-324, 1 / 3, 25.0, 1e16, 1e22, float("nan"), float("inf")]
        + [10 ** rng.uniform(-6, 17) for _ in range(3)]
    )


def _results(rng: random.Random, n: int, odd: float) -> list[QuestionResult]:
    """Results as the scorer builds them; with probability ``odd`` a field takes an awkward
    value (escapes, NaN, tiny floats, big integers, empty lists, None)."""

    def pick(plain: Any, awkward: Any) -> Any:
        return awkward() if rng.random() < odd else plain

    return [
        QuestionResult.trusted(
            {
                "id": pick(f"q{i}", lambda i=i: _text(rng) + str(i)),
                "question": "x",
                "form": rng.choice(list(QuestionForm)),
                "hard_class": pick("class1", lambda: rng.choice([None, _text(rng)])),
                "expected_document_ids": ["d"],
                "top1_hit": rng.random() < 0.3,
                "top3_hit": rng.random() < 0.6,
                "first_hit_rank": pick(3, lambda: rng.choice([None, 1, 2**64, -(2**70)])),
                "retrieved": pick(
                    [f"d{i}", "d2", "d3"],
                    lambda: [_text(rng) for _ in range(rng.randrange(4))],
                ),
                "latency_ms": pick(0.25 + i, lambda: rng.choice([None, _float(rng)])),
                "error": pick(None, lambda: rng.choice([None, "RuntimeError: a, b", _text(rng)])),
            }
        )
        for i in range(n)
    ]


def expected_list(questions: list[QuestionResult], stale: dict[str, list[str]]) -> str:
    """The contract's questions as json writes them inside the report (level 1)."""
    text = json.dumps(
        {"questions": _questions_contract(questions, stale)}, indent=2, ensure_ascii=False
    )
    return text[len('{\n  "questions": ') : -len("\n}")]


def run(questions: list[QuestionResult], dead: DeadLabels | None = None) -> RunResult:
    return RunResult(
        set_identifier="s",
        labels_fingerprint="f" * 64,
        retriever="r",
        settings=RunSettings(),
        question_count=len(questions),
        top1_hits=0,
        top3_hits=0,
        top1_hit_rate=None,
        top3_hit_rate=None,
        error_count=0,
        valid=True,
        by_form={},
        by_hard_class={},
        latency_ms={"p50": None, "p95": None},
        metrics={"mrr": 1e-9},
        questions=questions,
        dead_labels=dead,
    )


def test_the_fields_are_the_contracts_in_its_order() -> None:
    (question,) = _results(random.Random(0), 1, 0.0)
    assert tuple(_question_contract(question)) == FIELDS


@pytest.mark.parametrize("odd", [0.0, 0.05, 0.5])
@pytest.mark.parametrize("seed", range(12))
def test_random_results_are_json_dumps_to_the_byte(seed: int, odd: float) -> None:
    rng = random.Random(seed)
    questions = _results(rng, rng.randrange(1, 40), odd)
    assert questions_json(questions, {}) == expected_list(questions, {})


def test_without_orjson_the_text_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(question_json, "_orjson_indent", lambda: None)
    for seed in range(6):
        questions = _results(random.Random(seed), 30, 0.2)
        assert questions_json(questions, {}) == expected_list(questions, {})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("id", 'a"b'),  # escaped: json.dumps of the column, not the raw string
        ("id", "a, b"),  # split in two by the column's separators: one value at a time
        ("hard_class", "x, y"),
        ("error", "RuntimeError: a, b"),
        ("retrieved", []),
        ("retrieved", ["d", "\x01"]),
        ("retrieved", ['",\n        "']),  # the writer's own separator inside an id
        ("retrieved", ["a, b", "c"]),
        ("retrieved", [1, None, 0.5]),
        ("retrieved", [QuestionForm.GAP, "d"]),  # a str subclass: json writes its text too
        ("id", QuestionForm.GAP),
        ("hard_class", True),  # 1 == True: never written from one table
        ("first_hit_rank", True),
        ("first_hit_rank", 1.0),
        ("latency_ms", -0.0),  # 0.0 == -0.0
        ("latency_ms", float("nan")),  # json writes NaN, orjson null: not by orjson
        ("latency_ms", 1e-05),
        ("latency_ms", None),
        ("first_hit_rank", 2**64),
        ("top1_hit", None),
    ],
    ids=repr,
)
def test_one_awkward_value_among_plain_ones(field: str, value: Any) -> None:
    questions = _results(random.Random(1), 5, 0.0)
    object.__setattr__(questions[2], field, value)  # __dict__ is the values dict
    assert questions_json(questions, {}) == expected_list(questions, {})


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("first_hit_rank", Rank.ONE),
        ("retrieved", ("d1", "d2")),
        ("retrieved", [["d1"]]),
        ("latency_ms", {"ms": 1.0}),
    ],
    ids=repr,
)
def test_what_is_not_plain_is_left_to_the_records(field: str, value: Any) -> None:
    questions = _results(random.Random(2), 4, 0.0)
    object.__setattr__(questions[1], field, value)
    assert questions_json(questions, {}) is None
    result = run(questions)
    assert render_json(result) == json.dumps(result.contract(), indent=2, ensure_ascii=False) + "\n"


def test_no_questions_is_left_to_the_records() -> None:
    assert questions_json([], {}) is None
    result = run([])
    assert render_json(result) == json.dumps(result.contract(), indent=2, ensure_ascii=False) + "\n"


@pytest.mark.parametrize("seed", range(4))
def test_stale_questions_carry_their_fields(seed: int) -> None:
    questions = _results(random.Random(seed), 20, 0.1)
    ids = [q.id for q in questions]
    dead = DeadLabels(
        checked=True,
        dead_ids=["d", "e, f"],
        stale_questions=[ids[0], ids[7], ids[-1]],
    )
    for q in questions[:8]:
        object.__setattr__(q, "expected_document_ids", ["d", "e, f", "g"])
    result = run(questions, dead)
    stale = result.stale_targets()
    assert len(stale) == len(set(dead.stale_questions))
    assert questions_json(questions, stale) == expected_list(questions, stale)
    expected = json.dumps(result.contract(), indent=2, ensure_ascii=False) + "\n"
    assert render_json(result) == expected


@pytest.mark.parametrize("seed", range(6))
def test_the_report_is_json_dumps_of_the_contract_and_extra(seed: int) -> None:
    rng = random.Random(seed)
    result = run(_results(rng, rng.randrange(1, 30), 0.1))
    extra = {"run_id": None, "saved": False, "regression": {"status": "none", "x": [1.5]}}
    expected = json.dumps({**result.contract(), **extra}, indent=2, ensure_ascii=False) + "\n"
    assert render_json(result, extra) == expected


def test_questions_in_extra_are_the_reports() -> None:
    result = run(_results(random.Random(3), 3, 0.0))
    extra = {"questions": ["replaced"], "run_id": 4}
    expected = json.dumps({**result.contract(), **extra}, indent=2, ensure_ascii=False) + "\n"
    assert render_json(result, extra) == expected


@pytest.mark.parametrize(
    ("field", "common", "odd"),
    [
        ("first_hit_rank", 1, True),  # equal, written 1 and true
        ("hard_class", 1, True),
        ("latency_ms", 0.0, -0.0),  # equal, written 0.0 and -0.0
        ("first_hit_rank", 1, 1.0),
        ("hard_class", "c", None),  # few values: each written once, from a table
        ("first_hit_rank", None, 2**70),
    ],
    ids=repr,
)
def test_a_column_of_few_values_keeps_equal_values_apart(field: str, common: Any, odd: Any) -> None:
    questions = _results(random.Random(5), 40, 0.0)
    for q in questions:
        object.__setattr__(q, field, common)
    object.__setattr__(questions[17], field, odd)
    assert questions_json(questions, {}) == expected_list(questions, {})


@pytest.mark.parametrize("seed", range(30))
def test_the_columns_float_check_is_the_records(seed: int) -> None:
    rng = random.Random(seed)
    column = [rng.choice([None, _float(rng), 1.7e308, -1e-4]) for _ in range(rng.randrange(1, 9))]
    assert question_json._floats_alike(column) == json_text._written_alike(column) or (
        sum(abs(x) for x in column if x) == float("inf")  # an overflowing sum: refused, slower
    )


def test_floats_whose_sum_overflows_are_written_by_json() -> None:
    questions = _results(random.Random(6), 4, 0.0)
    for q in questions:
        object.__setattr__(q, "latency_ms", 1.7e308)
    assert questions_json(questions, {}) == expected_list(questions, {})


def test_the_fields_are_read_from_the_results_dict_as_getattr_reads_them() -> None:
    # _columns reads vars(result)[field] for an exact QuestionResult: true while no class
    # attribute (a property, a descriptor) shadows a field
    shadowed = [f for f in FIELDS if any(f in vars(c) for c in QuestionResult.__mro__)]
    assert shadowed == []
    (question,) = _results(random.Random(0), 1, 0.3)
    assert [vars(question)[f] for f in FIELDS] == [getattr(question, f) for f in FIELDS]

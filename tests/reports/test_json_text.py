"""The JSON report's text is what ``json.dumps(indent=2, ensure_ascii=False)`` writes, byte for
byte, whichever path lays out the questions: orjson (when installed), the field-by-field writer,
or json itself."""

from __future__ import annotations

import enum
import json
import random
import uuid
from typing import Any

import pytest

from retrieval_eval.reports import json_text
from retrieval_eval.reports.json_text import (
    _orjson_indent,
    _orjson_records,
    _records,
    indented_json,
)

orjson_installed = pytest.mark.skipif(_orjson_indent() is None, reason="orjson not installed")

TEXTS = [
    "q1",
    "",
    "é",
    "☃😀",
    'q"\\',
    "a\nb\tc",
    "\x00\x1f\x7f",
    "\u2028\u2029",
    "</script>",
    " x ",
]


class Colour(enum.Enum):
    RED = "red"


class Form(enum.StrEnum):
    GAP = "gap"


def _float(rng: random.Random) -> float:
    return rng.choice(
        [0.0, -0.0, 1e-4, 0.011761999985537841, 1 / 3, 25.0, 1e16, 1e22, 12345.678]
        + [10 ** rng.uniform(-4, 17) for _ in range(3)]  # orjson writes less as 0.0000...
    )


def question_records(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """Records shaped as the contract's questions, with awkward strings and numbers."""
    return [
        {
            "id": rng.choice(TEXTS) + str(i),
            "form": rng.choice(["match", "gap"]),
            "hard_class": rng.choice([None, *TEXTS]),
            "top1_hit": rng.random() < 0.3,
            "top3_hit": rng.random() < 0.6,
            "first_hit_rank": rng.choice([None, 1, 2, 3, 17]),
            "retrieved": [rng.choice(TEXTS) + str(j) for j in range(rng.randrange(4))],
            "latency_ms": rng.choice([None, _float(rng)]),
            "error": rng.choice([None, None, "RuntimeError: x", *TEXTS]),
        }
        for i in range(n)
    ]


def report(questions: object) -> dict[str, Any]:
    return {"set": "s", "questions": questions, "metrics": {"mrr": 1e-9}, "run_id": None}


@pytest.mark.parametrize("seed", range(20))
def test_random_question_records_are_json_dumps_to_the_byte(seed: int) -> None:
    rng = random.Random(seed)
    document = report(question_records(rng, rng.randrange(1, 60)))
    assert indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)


@orjson_installed
@pytest.mark.parametrize("seed", range(10))
def test_plain_records_are_written_by_orjson_as_the_writer_lays_them_out(seed: int) -> None:
    records = question_records(random.Random(seed), 40)
    by_orjson = _orjson_records(records)
    assert by_orjson is not None  # plain values: orjson's path was taken
    assert by_orjson == _records(records, 1)


def test_without_orjson_the_text_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    document = report(question_records(random.Random(7), 30))
    monkeypatch.setattr(json_text, "_orjson_indent", lambda: None)
    assert indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)


@pytest.mark.parametrize(
    "value",
    [
        float("nan"),
        float("inf"),
        float("-inf"),
        1e-05,  # orjson writes 0.00001
        9.999999999999999e-05,
        -3.5e-8,
        5e-324,
        2**64,  # past orjson's integers
        -(2**63) - 1,
        "\ud800",  # a lone surrogate orjson refuses
        Colour.RED,  # written by orjson, refused by json
        uuid.UUID(int=1),
        Form.GAP,  # a str subclass
        (1, 2),
        [[1.5e-5]],
        {"x": {"y": float("nan")}},
        {1: "a key that is no string"},
    ],
    ids=repr,
)
def test_what_orjson_could_write_otherwise_takes_the_other_paths(value: object) -> None:
    records = [{"id": "q1", "latency_ms": 0.5}, {"id": "q2", "value": value}]
    assert _orjson_records(records) is None
    document = report(records)
    try:
        expected = json.dumps(document, indent=2, ensure_ascii=False)
    except TypeError:  # json refuses it too: so does indented_json, never writing it otherwise
        with pytest.raises(TypeError):
            indented_json(document)
        return
    assert indented_json(document) == expected


@orjson_installed
@pytest.mark.parametrize(
    "records",
    [
        [{}],
        [{"a": {}}, {"b": []}],
        [{"nested": {"deeper": [1, {"x": None}], "n": 0.25}}],
        [{"zero": 0.0, "negative zero": -0.0, "least": 1e-4, "big": 1e300, "int": 2**63 - 1}],
    ],
)
def test_nested_and_empty_values_orjson_writes_alike(records: list[dict[str, Any]]) -> None:
    assert _orjson_records(records) is not None
    document = report(records)
    assert indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)


def test_a_cycle_is_never_walked_forever() -> None:
    looped: list[Any] = []
    looped.append(looped)
    assert _orjson_records([{"loop": looped}]) is None
    with pytest.raises(ValueError, match="Circular reference"):
        indented_json(report([{"loop": looped}]))


def test_a_list_held_twice_is_written_twice_and_a_doubled_cycle_is_left_to_json() -> None:
    shared = [1.5, "x"]
    document = report([{"a": shared, "b": shared}])  # no cycle: both write it twice
    assert _orjson_records(document["questions"]) is not None or _orjson_indent() is None
    assert indented_json(document) == json.dumps(document, indent=2, ensure_ascii=False)
    doubled: list[Any] = []
    doubled += [doubled, doubled]  # walked by levels, it doubles at each one: a bounded walk
    assert _orjson_records([{"loop": doubled}]) is None

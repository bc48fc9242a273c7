"""Property tests: hostile files never crash the loaders, and the scorer follows its rules.

- The set loader (``load_golden_set``) and the config loader (``load_config``), given files of
  arbitrary bytes, arbitrary text, arbitrary JSON/YAML structures (set- and config-shaped ones
  too) and CSV rows, either load or raise a documented error (a RetrievalEvalError subclass);
  never a bare KeyError, TypeError, ValueError, RecursionError or UnicodeDecodeError.
- The scorer, given arbitrary rankings, raising retrievers and malformed answers, agrees with a
  reference implementation of the rules written here, and never crashes.

The crashes these properties found in the loaders each have a property of their own below, with
its reproducer as an explicit example (deep nesting, integers of thousands of digits, YAML keys
of mixed types, CSV cells past 131,072 characters: all now documented errors); the general
properties leave those inputs out so that they keep guarding everything else. Examples are
derandomized (the same every run: a failure reproduces) and not saved to a database.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from retrieval_eval.config.models import Config, load_config
from retrieval_eval.errors import RetrievalEvalError
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import CSV_COLUMNS, load_golden_set
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever

FUZZ = settings(
    max_examples=150,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SET_SUFFIXES = [".yaml", ".json", ".jsonl", ".csv"]
T = TypeVar("T")


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


def write(folder: Path, suffix: str, content: bytes | str) -> Path:
    path = folder / f"fuzz_set{suffix}"
    if isinstance(content, str):
        content = content.encode("utf-8")
    path.write_bytes(content)
    return path


def load_or_documented_error(load: Callable[[Path], T], path: Path) -> T | None:
    """What ``load(path)`` returns, or None for a documented error (a RetrievalEvalError);
    anything else escapes and fails the test."""
    try:
        return load(path)
    except RetrievalEvalError:
        return None


def load_set_or_documented_error(path: Path) -> GoldenQuestionSet | None:
    return load_or_documented_error(load_golden_set, path)


def load_config_or_documented_error(path: Path) -> Config | None:
    return load_or_documented_error(load_config, path)


# --- strategies ---------------------------------------------------------------------------------

# integers stay far below the 4,300 digits past which int() refuses a literal (its own test below)
scalars = (
    st.none() | st.booleans() | st.integers(-(10**30), 10**30) | st.floats() | st.text(max_size=12)
)
# few levels of nesting only: deep nesting has its own test below
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=16,
)
# string keys: keys of mixed types have their own test below
yaml_keys = st.text(max_size=8)
yaml_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(yaml_keys, inner, max_size=4),
    max_leaves=16,
)
names = st.sampled_from(["handbook.demo", "a", "A b", "", " ", "x.y.z", "q1", "q2"]) | st.text(
    max_size=10
)
doc_ids = st.lists(st.sampled_from(["d1", "d2", "", " "]) | st.text(max_size=5), max_size=4)
question_shaped = st.fixed_dictionaries(
    {
        "id": names | json_values,
        "question": names | json_values,
        "form": st.sampled_from(["match", "gap", "GAP", " Match ", "other", ""]) | json_values,
    },
    optional={
        "expected_document_ids": doc_ids | json_values,
        "hard_class": names | json_values,
        "answer_gist": names | json_values,
        "extra": json_values,
    },
)
set_shaped = st.fixed_dictionaries(
    {
        "identifier": names | json_values,
        "questions": st.lists(question_shaped | json_values, max_size=5),
    },
    optional={
        "name": names | json_values,
        "description": json_values,
        "corpus_revision": names | json_values,
        "unknown": json_values,
    },
)
# valid sets, to reach the success path: each loads with exactly these questions
# text is any text (st.text's own alphabet: no lone surrogates) but NUL, which no store keeps
texts = st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00")
words = st.text(texts, min_size=1, max_size=12).filter(str.strip)
# ids are plain text: no control characters (refused), compared stripped
plain_text = st.characters(blacklist_categories=("Cc",))
id_words = st.text(plain_text, min_size=1, max_size=12).filter(str.strip)
plain = st.text("abcxyz019_-", min_size=1, max_size=6)  # survives CSV's "|" split and strip
valid_questions = st.fixed_dictionaries(
    {"id": id_words, "question": words, "form": st.sampled_from(["match", "gap", "Gap"])},
    optional={
        "expected_document_ids": st.lists(plain, unique=True, max_size=3),
        "hard_class": words,
        "answer_gist": words,
    },
)
valid_sets = st.fixed_dictionaries(
    {
        "identifier": st.from_regex(r"[a-z0-9_]{1,6}(\.[a-z0-9_]{1,6}){0,2}", fullmatch=True),
        "questions": st.lists(
            valid_questions, min_size=1, max_size=5, unique_by=lambda q: q["id"].strip()
        ),
    },
    optional={"name": st.text(texts, max_size=10), "corpus_revision": words},
)
documents = valid_sets | set_shaped | json_values


def as_json(suffix: str, data: Any) -> str:
    if suffix == ".jsonl":  # one question per line
        rows = data if isinstance(data, list) else [data]
        return "\n".join(json.dumps(row) for row in rows)
    return json.dumps(data)


# --- the set loader -----------------------------------------------------------------------------


@FUZZ
@given(
    suffix=st.sampled_from(SET_SUFFIXES), content=st.binary(max_size=600) | st.text(max_size=300)
)
@example(suffix=".csv", content=b"\xff\xfeid,question,form\n")  # not UTF-8
@example(suffix=".yaml", content=b"\x00\x01")
@example(suffix=".json", content="\ufeff{}")
@example(suffix=".yaml", content="a: &a [*a]\nidentifier: *a\nquestions: &q [*q]\n")  # cycles
@example(suffix=".yaml", content="identifier: a\nquestions: [{id: q, question: q, form: &f [*f]}]")
@example(suffix=".csv", content='id,question,form\n"q\n')
@example(suffix=".csv", content="id,question,form\nq,a\rb,match\n")
@example(suffix=".jsonl", content='{"id": "q"}\n[\n\x00\n')
def test_set_loader_survives_arbitrary_bytes(
    folder: Path, suffix: str, content: bytes | str
) -> None:
    load_set_or_documented_error(write(folder, suffix, content))


@FUZZ
@given(suffix=st.sampled_from([".json", ".jsonl"]), data=documents)
def test_set_loader_survives_arbitrary_json(folder: Path, suffix: str, data: Any) -> None:
    load_set_or_documented_error(write(folder, suffix, as_json(suffix, data)))


@FUZZ
@given(data=documents | yaml_values)
def test_set_loader_survives_arbitrary_yaml(folder: Path, data: Any) -> None:
    load_set_or_documented_error(
        write(folder, ".yaml", yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    )


@FUZZ
@given(
    header=st.sampled_from([list(CSV_COLUMNS), ["id", "question", "form"]])
    | st.lists(st.sampled_from([*CSV_COLUMNS, "extra", ""]) | st.text(max_size=6), max_size=8),
    rows=st.lists(st.lists(st.text(max_size=20), max_size=8), max_size=6),
)
def test_set_loader_survives_arbitrary_csv_rows(
    folder: Path, header: list[str], rows: list[list[str]]
) -> None:
    buffer = io.StringIO()
    csv.writer(buffer).writerows([header, *rows])
    loaded = load_set_or_documented_error(write(folder, ".csv", buffer.getvalue()))
    if loaded is not None:
        assert len(loaded.questions) == len(rows)


@FUZZ
@given(suffix=st.sampled_from([".json", ".jsonl", ".yaml", ".csv"]), data=valid_sets)
def test_a_valid_set_loads_with_its_questions_in_every_format(
    folder: Path, suffix: str, data: dict[str, Any]
) -> None:
    questions = data["questions"]
    if suffix == ".csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, CSV_COLUMNS)
        writer.writeheader()
        for question in questions:
            ids = "|".join(question.get("expected_document_ids", []))
            writer.writerow({**question, "expected_document_ids": ids})
        text = buffer.getvalue()
    elif suffix == ".yaml":
        text = yaml.safe_dump(data, allow_unicode=True, sort_keys=False)
    else:
        text = as_json(suffix, questions if suffix == ".jsonl" else data)
    loaded = load_golden_set(write(folder, suffix, text))
    assert [q.id for q in loaded.questions] == [q["id"].strip() for q in questions]
    assert [q.expected_document_ids for q in loaded.questions] == [
        tuple(q.get("expected_document_ids", ())) for q in questions
    ]


# Inputs that crashed the set loader when the fuzzers found them: each must be a GoldenSetError.


@FUZZ
@given(suffix=st.sampled_from([".json", ".jsonl"]), depth=st.integers(2_000, 50_000))
@example(suffix=".json", depth=100_000)
def test_set_loader_survives_deep_json(folder: Path, suffix: str, depth: int) -> None:
    load_set_or_documented_error(write(folder, suffix, "[" * depth + "]" * depth))


@FUZZ
@given(suffix=st.sampled_from([".json", ".jsonl", ".yaml"]), digits=st.integers(4_301, 20_000))
@example(suffix=".yaml", digits=4_301)
def test_set_loader_survives_huge_integers(folder: Path, suffix: str, digits: int) -> None:
    number = "9" * digits
    text = f"identifier: {number}\n" if suffix == ".yaml" else f'{{"identifier": {number}}}'
    load_set_or_documented_error(write(folder, suffix, text))


@FUZZ
@given(
    keys=st.lists(
        st.integers() | st.none() | st.booleans() | st.floats(allow_nan=False),
        min_size=1,
        max_size=3,
    ),
    data=set_shaped,
)
@example(keys=[1], data={"identifier": "a", "questions": []})  # beside the "b" below
def test_set_loader_survives_non_string_keys(
    folder: Path, keys: list[Any], data: dict[str, Any]
) -> None:
    document = {**data, **dict.fromkeys(keys, "x"), "b": "c"}  # an unknown string key too
    load_set_or_documented_error(write(folder, ".yaml", yaml.safe_dump(document, sort_keys=False)))


@FUZZ
@given(size=st.integers(131_073, 300_000), column=st.integers(0, 2))
@example(size=131_073, column=0)
def test_set_loader_survives_huge_csv_cells(folder: Path, size: int, column: int) -> None:
    cells = ["q1", "Why?", "match"]
    cells[column] = "x" * size
    text = "id,question,form\n" + ",".join(cells) + "\n"
    load_set_or_documented_error(write(folder, ".csv", text))


# --- the config loader --------------------------------------------------------------------------

config_shaped = st.fixed_dictionaries(
    {},
    optional={
        "store": names | json_values,
        "sets": st.lists(
            names
            | st.fixed_dictionaries(
                {}, optional={"path": names, "directory": names, "identifier": names}
            )
            | json_values,
            max_size=3,
        )
        | json_values,
        "retrievers": st.dictionaries(
            names, st.dictionaries(names, json_values, max_size=3) | json_values, max_size=3
        )
        | json_values,
        "run": st.fixed_dictionaries(
            {},
            optional={
                "cutoffs": st.lists(st.integers(-3, 20), max_size=3) | json_values,
                "overfetch_multiplier": json_values,
                "timeout_s": json_values,
                "max_error_rate": json_values,
                "max_concurrency": json_values,
            },
        )
        | json_values,
        "thresholds": st.dictionaries(
            st.sampled_from(["max_top1_drop", "max_top3_drop", "min_slice_questions", "x"]),
            json_values,
            max_size=3,
        )
        | json_values,
        "airflow": st.dictionaries(
            st.sampled_from(["retries", "queue", "ui_base_url", "y"]), json_values, max_size=3
        )
        | json_values,
        "evaluations": st.lists(
            st.fixed_dictionaries(
                {"set": names | json_values, "retriever": names | json_values},
                optional={
                    "alerts": st.lists(
                        st.dictionaries(yaml_keys, json_values, max_size=3), max_size=2
                    ),
                    "max_batches": json_values,
                },
            )
            | json_values,
            max_size=3,
        )
        | json_values,
        "unknown": json_values,
    },
)


@FUZZ
@given(content=st.binary(max_size=600) | st.text(max_size=300))
@example(content=b"\xff\xfe\x00")
@example(content="run: &r {cutoffs: *r}\n")  # a cycle through an anchor
@example(content="sets: &s [*s]\n")
@example(content="{null: 1}\n")
@example(content="? [a]\n: b\n")
def test_config_loader_survives_arbitrary_bytes(folder: Path, content: bytes | str) -> None:
    load_config_or_documented_error(write(folder, ".yaml", content))


@FUZZ
@given(data=config_shaped | yaml_values)
def test_config_loader_survives_arbitrary_yaml(folder: Path, data: Any) -> None:
    load_config_or_documented_error(
        write(folder, ".yaml", yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    )


@FUZZ
@given(key=st.sampled_from(["store", "unknown", "run"]), digits=st.integers(4_301, 20_000))
@example(key="store", digits=4_301)
def test_config_loader_survives_huge_integers(folder: Path, key: str, digits: int) -> None:
    load_config_or_documented_error(write(folder, ".yaml", f"{key}: {'9' * digits}\n"))


@FUZZ
@given(
    key=st.sampled_from(["retrievers", "run", "unknown"]),
    depth=st.integers(40, 3_000),
    flow=st.booleans(),
)
@example(key="retrievers", depth=999, flow=True)  # just inside libyaml's own limit
@example(key="retrievers", depth=100_000, flow=True)
def test_config_loader_survives_deep_yaml(folder: Path, key: str, depth: int, flow: bool) -> None:
    if flow:
        text = f"{key}: {{r: {'[' * depth}{']' * depth}}}\n"
    else:
        text = f"{key}:\n" + "".join(f"{'  ' * level}- \n" for level in range(1, depth))
    load_config_or_documented_error(write(folder, ".yaml", text))


# --- the scorer ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Raises:
    """The retriever raises this exception for the question."""

    error: type[Exception]


class Unprintable(Exception):
    def __str__(self) -> str:
        raise ValueError("this exception cannot describe itself")


MALFORMED = [None, 42, "d1", b"d1", {"d1"}, {"d1": 1}, ["d1", None], [b"d1"], [["d1"]], ("d1", 1)]
DOCS = ["d1", "d2", "d3", "d4", "d5"]
rankings = st.lists(st.sampled_from([*DOCS, ""]) | st.text(max_size=3), max_size=20)
outcomes = (
    rankings
    | rankings.map(tuple)
    | st.sampled_from([ValueError, KeyError, TimeoutError, OSError, RuntimeError, Unprintable]).map(
        Raises
    )
    | st.sampled_from(MALFORMED)
)
targets = st.lists(
    st.sampled_from(DOCS)
    | st.text(plain_text, min_size=1, max_size=3).filter(lambda text: text == text.strip() != ""),
    unique=True,
    max_size=3,
)


def reference(expected: Sequence[str], outcome: Any, limit: int) -> tuple[bool, bool]:
    """(top-1 hit, top-3 hit) by the documented rules, independently of the scorer."""
    if not isinstance(outcome, list | tuple) or not all(type(doc) is str for doc in outcome):
        return False, False  # raised or answered something else: a miss at both depths
    distinct: list[str] = []
    for doc in outcome[:limit]:  # the retriever was asked for `limit` ids
        if doc and doc not in distinct:  # first occurrences only, empty ids ignored
            distinct.append(doc)
    if not expected:  # no-result question: a hit only when nothing came back
        return not distinct, not distinct
    return bool(distinct) and distinct[0] in expected, any(d in expected for d in distinct[:3])


def retriever_of(table: dict[str, Any], asked: list[int]) -> FunctionRetriever:
    def search(question: str, limit: int) -> Any:
        asked.append(limit)
        outcome = table[question]
        if isinstance(outcome, Raises):
            raise outcome.error()
        return outcome[:limit] if isinstance(outcome, list | tuple) else outcome

    return FunctionRetriever(search, identifier="fuzz")


@FUZZ
@given(
    cases=st.lists(st.tuples(targets, outcomes), min_size=1, max_size=12),
    multiplier=st.integers(1, 4),
    cutoffs=st.lists(st.integers(1, 6), min_size=1, max_size=3),
)
@example(
    cases=[([], ["", ""]), ([], Raises(RuntimeError)), (["d1"], ["d2", "d2", "", "d3", "d1"])],
    multiplier=4,
    cutoffs=[1, 3],
)
@example(cases=[(["d1"], Raises(Unprintable))], multiplier=4, cutoffs=[1, 3])
def test_scorer_rates_follow_the_reference_rules(
    cases: list[tuple[list[str], Any]], multiplier: int, cutoffs: list[int]
) -> None:
    questions = [
        GoldenQuestion(
            id=f"q{i}",
            question=f"text of q{i}",
            form="match",
            expected_document_ids=tuple(expected),
        )
        for i, (expected, _) in enumerate(cases)
    ]
    table = {q.question: outcome for q, (_, outcome) in zip(questions, cases, strict=True)}
    settings = RunSettings(timeout_s=None, overfetch_multiplier=multiplier, cutoffs=cutoffs)
    depth = max(3, *cutoffs)
    asked: list[int] = []

    result = evaluate(
        GoldenQuestionSet(identifier="fuzz.set", questions=questions),
        retriever_of(table, asked),
        settings,
    )

    limit = depth * multiplier  # overfetch: the deepest cutoff times the multiplier
    assert asked == [limit] * len(cases)
    expected = [reference(targets, outcome, limit) for targets, outcome in cases]
    assert [(q.top1_hit, q.top3_hit) for q in result.questions] == expected
    assert result.top1_hit_rate == pytest.approx(sum(top1 for top1, _ in expected) / len(cases))
    assert result.top3_hit_rate == pytest.approx(sum(top3 for _, top3 in expected) / len(cases))
    failed = [
        not isinstance(o, list | tuple) or not all(type(d) is str for d in o) for _, o in cases
    ]
    assert [q.error is not None for q in result.questions] == failed
    assert result.error_count == sum(failed)


@FUZZ
@given(timeout_s=st.floats(min_value=1.0, allow_infinity=True), answer=rankings)
@example(timeout_s=float("inf"), answer=["d1"])
@example(timeout_s=1e300, answer=["d1"])  # what a config's `timeout_s: 1e300` gives
def test_scorer_survives_any_timeout_the_config_accepts(
    timeout_s: float, answer: list[str]
) -> None:
    question = GoldenQuestion(id="q", question="q?", form="match", expected_document_ids=("d1",))
    golden = GoldenQuestionSet(identifier="fuzz.set", questions=[question])

    def retriever(text: str, limit: int) -> list[str]:
        return answer

    result = evaluate(golden, FunctionRetriever(retriever), RunSettings(timeout_s=timeout_s))
    assert result.top1_hits == reference(["d1"], answer, 12)[0]

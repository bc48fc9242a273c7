"""Hostile set files: bounded time, memory and messages, each refusal an exit-2 error naming the
file and the limit it broke.

Limits (``retrieval_eval/safety/limits.py``): YAML anchors/aliases are refused in set files; nesting
past 50 levels is refused; a set file over 256 MiB is refused unread; messages quote at most
~200 characters of any input value; integers longer than Python's int-to-str limit (4,300
digits) and CSV cells longer than csv's field limit (131,072 characters) are errors, not crashes.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from golden.test_loaders import problems_of, write
from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.loaders import load_golden_set, validate_set_data

EXE = Path(sys.executable).parent / "retrieval-eval"
QUESTION = '{"id": "q1", "question": "Where?", "form": "match"}'
# what a message may hold: the file, the question, the field, the text and ~200 quoted characters
MESSAGE_BUDGET = 600


def laughs(levels: int, width: int, *, where: str = "form") -> str:
    """A billion-laughs set: level i lists `width` aliases of level i-1; `where` uses the last."""
    lines = ["identifier: bomb", f"l0: &l0 [{', '.join(['lol'] * width)}]"]
    for level in range(1, levels):
        lines.append(f"l{level}: &l{level} [{', '.join([f'*l{level - 1}'] * width)}]")
    last = f"*l{levels - 1}"
    if where == "questions":
        lines.append(f"questions: {last}")
    else:
        lines.append(f"questions:\n  - {{id: q, question: q, form: {last}}}")
    return "\n".join(lines) + "\n"


# --- YAML aliases -------------------------------------------------------------------------------


def test_a_yaml_alias_is_refused_naming_the_file_and_the_rule(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "identifier: s\nquestions:\n  - &q {id: a, question: b, form: match}\n  - *q\n",
    )
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: line 3, column ")
    assert "YAML anchors and aliases are not allowed in a set file" in problem


def test_an_anchor_in_text_is_no_alias(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.yaml",
        "identifier: s\nquestions:\n  - {id: a&b, question: 'Q&A *now*', form: match}\n",
    )
    assert load_golden_set(path).questions[0].question == "Q&A *now*"


@pytest.mark.parametrize("where", ["form", "questions"])
def test_a_small_alias_bomb_gives_one_short_message(tmp_path: Path, where: str) -> None:
    # depth 5, width 10: 100,000 'lol's expanded; the message used to quote all of them (428 KB)
    path = write(tmp_path, "bomb.yaml", laughs(5, 10, where=where))
    tracemalloc.start()
    try:
        [problem] = problems_of(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # not expanded: ~20 KB refused; expanding and writing it out takes ~4.5 MB (a clock would
    # say the same on an idle machine, and fail on a loaded one)
    assert peak < 1_000_000
    assert len(problem) < MESSAGE_BUDGET
    assert "YAML anchors and aliases are not allowed" in problem


def test_a_10_mb_billion_laughs_exits_2_within_seconds_in_512_mb(tmp_path: Path) -> None:
    """The CLI in a process limited to 512 MB of address space: refused, not expanded."""
    path = write(tmp_path, "bomb.yaml", laughs(9, 230_000))
    assert 9_000_000 < path.stat().st_size < 12_000_000

    def limit_memory() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (512 * 2**20, 512 * 2**20))

    started = time.perf_counter()
    done = subprocess.run(
        [str(EXE), "sets", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=limit_memory,
    )
    elapsed = time.perf_counter() - started
    assert done.returncode == 2, done.stderr[-2000:]
    assert "YAML anchors and aliases are not allowed in a set file" in done.stderr
    assert len(done.stderr) < 2 * MESSAGE_BUDGET
    assert elapsed < 15


# --- nesting ------------------------------------------------------------------------------------


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("depth", [50, 900, 100_000])
def test_json_nested_past_the_limit_is_refused(tmp_path: Path, depth: int) -> None:
    # the document is level 1: 50 lists inside it make 51 levels
    path = write(
        tmp_path,
        "s.json",
        f'{{"identifier": "s", "questions": [{QUESTION}], "x": {nested(depth)}}}',
    )
    assert problems_of(path) == [f"{path}: nested more than 50 levels deep (the limit is 50)"]


@pytest.mark.parametrize("depth", [51, 100_000])  # a JSONL line is a document of its own
def test_jsonl_nested_past_the_limit_names_the_line(tmp_path: Path, depth: int) -> None:
    path = write(tmp_path, "s.jsonl", f"{QUESTION}\n{nested(depth)}\n")
    assert problems_of(path) == [
        f"{path}: line 2: nested more than 50 levels deep (the limit is 50)"
    ]


@pytest.mark.parametrize("depth", [51, 2_000])
def test_yaml_nested_past_the_limit_is_refused(tmp_path: Path, depth: int) -> None:
    path = write(tmp_path, "s.yaml", f"identifier: s\nquestions:\n  - form: {nested(depth)}\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: ")
    assert problem.endswith("nested more than 50 levels deep (the limit is 50)")


def test_nesting_within_the_limit_is_reported_field_by_field(tmp_path: Path) -> None:
    # the document, the questions list and 48 lists inside it: 50 levels, the most allowed
    path = write(tmp_path, "s.json", f'{{"identifier": "s", "questions": [{nested(48)}]}}')
    [problem] = problems_of(path)
    assert "question #1: expected a mapping of question fields" in problem


# --- file size ----------------------------------------------------------------------------------


def test_a_set_file_over_256_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as handle:
        handle.truncate(256 * 2**20 + 1)  # sparse: nothing is written, nothing may be read
    [problem] = problems_of(path)
    assert problem == f"{path}: 268,435,457 bytes, over the limit for a set file (256 MiB)"


# --- the quoting of input in messages -----------------------------------------------------------

HUGE = "x" * 10_000_000


@pytest.mark.parametrize(
    "question",
    [
        {"id": HUGE, "question": "q", "form": "match"},
        {"id": "q", "question": "q", "form": HUGE},
        {"id": "q", "question": "q", "form": [HUGE] * 1000},
        {"id": "q", "question": "q", "form": "match", HUGE: 1},
        {"id": "q", "question": "q", "form": "match", "expected_document_ids": [HUGE, HUGE]},
        {"id": "q", "question": "q", "form": "match", "expected_document_ids": [f"a\x00{HUGE}"]},
        {"id": "q", "question": "q", "form": 10**5000},
    ],
    ids=[
        "id",
        "form",
        "form-list",
        "field-name",
        "duplicate-doc-id",
        "control-character",
        "long-integer",
    ],
)
def test_messages_quote_at_most_about_200_characters_of_input(question: dict) -> None:
    with pytest.raises(GoldenSetError) as info:
        validate_set_data({"identifier": "s", "questions": [question, dict(question)]})
    assert info.value.problems
    for problem in info.value.problems:
        assert len(problem) < MESSAGE_BUDGET, problem[:1000]


def test_set_level_messages_quote_little_of_the_input() -> None:
    data = {
        "identifier": "Bad" + HUGE,
        "questions": [{"id": "q", "question": "q", "form": "match"}],
        **{f"{HUGE}{n}": n for n in range(50)},
    }
    with pytest.raises(GoldenSetError) as info:
        validate_set_data(data)
    assert len(info.value.problems) == 2
    for problem in info.value.problems:
        assert len(problem) < 2 * MESSAGE_BUDGET, problem[:1000]
    assert "and 45 more" in info.value.problems[0]


def test_a_long_identifier_is_quoted_short_in_every_message(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.json",
        json.dumps({"identifier": "a" * 100_000, "questions": [{"id": "q", "form": "x"}]}),
    )
    for problem in problems_of(path):
        assert len(problem) < MESSAGE_BUDGET, problem[:1000]


# --- what the fuzzers found ---------------------------------------------------------------------


@pytest.mark.parametrize("suffix", [".json", ".jsonl", ".yaml"])
def test_an_integer_past_the_digit_limit_is_an_error(tmp_path: Path, suffix: str) -> None:
    number = "9" * 4_301
    text = f"identifier: {number}\n" if suffix == ".yaml" else f'{{"identifier": {number}}}'
    [problem] = problems_of(write(tmp_path, f"s{suffix}", text))
    assert problem.startswith(f"{tmp_path / f's{suffix}'}: ")
    assert "integer of 4,301 digits is over the limit of 4,300 digits" in problem
    assert len(problem) < MESSAGE_BUDGET


def test_unknown_keys_of_mixed_types_are_listed(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestions: []\n1: a\nb: c\nnull: d\n")
    problems = problems_of(path)
    assert any("unknown set field(s) 1, 'b', None;" in p for p in problems)


def test_a_question_with_keys_of_mixed_types(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestions:\n  - {id: q, 1: a, b: c}\n")
    problems = problems_of(path)
    assert any("field 1: unknown field" in p for p in problems)
    assert any("field 'b': unknown field" in p for p in problems)


def test_a_csv_cell_past_the_field_limit_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", f"id,question,form\nq1,Why?,match\nq2,{'x' * 131_073},gap\n")
    assert problems_of(path) == [
        f"{path}: line 3: invalid CSV: field larger than field limit (131072)"
    ]


# --- CSV syntax ---------------------------------------------------------------------------------


def test_an_unterminated_quote_names_the_line_it_opens_on(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", 'id,question,form\nq1,"Where?,match\nq2,How?,gap\n')
    assert problems_of(path) == [
        f"{path}: line 2: invalid CSV: unexpected end of data (a quoted field is never closed)"
    ]


def test_a_stray_quote_is_a_csv_error(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", 'id,question,form\nq1,Where?,match\nq2,"How" now,gap\n')
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: line 3: invalid CSV: ")


def test_a_bad_header_is_a_csv_error(tmp_path: Path) -> None:
    path = write(tmp_path, "s.csv", 'id,"question,form\n')
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: line 1: invalid CSV: unexpected end of data")


def test_quoted_fields_over_several_lines_still_load(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.csv",
        'id,question,form\nq1,"Where,\nexactly?",match\nq2,"Say ""hi""",gap\nq3,x,gap\n',
    )
    golden = load_golden_set(path)
    assert [q.question for q in golden.questions] == ["Where,\nexactly?", 'Say "hi"', "x"]


# --- ids ----------------------------------------------------------------------------------------


def test_id_problems_name_the_question_and_the_field(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.jsonl",
        '{"id": "q1", "question": "?", "form": "gap"}\n'
        '{"id": "q\\u0000", "question": "?", "form": "gap"}\n'
        '{"id": "q3", "question": "?", "form": "gap", "expected_document_ids": ["d\\u001b"]}\n'
        '{"id": " q1", "question": "?", "form": "gap"}\n'
        '{"id": "q5", "question": "?", "form": "gap", "expected_document_ids": ["a", " a "]}\n',
    )
    assert problems_of(path) == [
        f"{path} (set 's'): question 'q\\x00' (#2, line 2): field 'id': contains a control "
        "character ('\\x00'); ids are plain text",
        f"{path} (set 's'): question 'q3' (#3, line 3): field 'expected_document_ids': "
        "document id 'd\\x1b' contains a control character ('\\x1b'); ids are plain text",
        f"{path} (set 's'): question 'q1' (#4, line 4): duplicate question id 'q1' (first at "
        "question #1); give each question its own id",
        f"{path} (set 's'): question 'q5' (#5, line 5): field 'expected_document_ids': "
        "lists document id 'a' twice",
    ]


def test_stripped_expected_ids_match_in_every_format(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "s.json",
        '{"identifier": "s", "questions": [{"id": "q", "question": "?", "form": "gap", '
        '"expected_document_ids": [" a ", "b"]}]}',
    )
    assert load_golden_set(path).questions[0].expected_document_ids == ("a", "b")

"""Reading JSONL with C-level passes (loaders._every_line_decoded) gives what the loop gives.

Random files from lines that decode, lines that do not, blank and whitespace-only lines (JSON's
whitespace and other), extra data after a value, and a document split over lines: the rows,
their line numbers and the problems must be the loop's. Seeded (derandomized).
"""

from __future__ import annotations

from pathlib import Path
from unittest import mock

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval_eval.golden import loaders

LINES = st.sampled_from(
    [
        '{"id": "q1", "question": "?", "form": "gap"}',
        ' {"id": "q2"}\t',
        "[1, 2]",
        '"text"',
        "12",
        "1" * 5000,  # past the int-to-text limit
        "[" * 60 + "]" * 60,
        "",
        "   ",
        "\xa0",
        "\r",
        "{",
        "}",
        "1, 2",
        '{"a": 1} {"b": 2}',
        '{"a": [{}',
        "{}]}",
        "nul",
        "\ufeff{}",
        "\u2028",
    ]
)
FILES = st.lists(LINES, max_size=8).map("\n".join)


def read(text: str, fast: bool) -> object:
    path = Path("set.jsonl")
    if fast:
        return loaders._read_jsonl(path, text)
    with mock.patch.object(loaders, "_every_line_decoded", lambda text: None):
        return loaders._read_jsonl(path, text)


@settings(
    max_examples=400,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(FILES)
def test_the_fast_read_gives_what_the_loop_gives(text: str) -> None:
    assert read(text, fast=True) == read(text, fast=False)


def test_a_file_of_json_lines_is_read_by_the_fast_read() -> None:
    text = '{"id": "q1"}\n [1]\r\n"x"\t\n'
    assert loaders._every_line_decoded(text) == [{"id": "q1"}, [1], "x"]
    assert read(text, fast=True) == ([{"id": "q1"}, [1], "x"], [1, 2, 3], [])


def test_a_document_split_over_two_lines_is_left_to_the_loop() -> None:
    # joined, the two lines would be two objects: line by line, neither is JSON
    assert loaders._every_line_decoded('{"a": [{}\n{}]}') is None
    assert loaders._every_line_decoded('{"a": 1}\n\n{"b": 2}') is None  # a blank line

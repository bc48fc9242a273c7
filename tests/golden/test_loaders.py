"""Reading set files: four formats, and every problem of a file reported at once, placed exactly."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_eval.errors import GoldenSetError, InvalidInputError
from retrieval_eval.golden.loaders import dump_golden_set, load_golden_set, validate_set_data
from retrieval_eval.golden.models import QuestionForm

FIXTURES = Path(__file__).parent / "fixtures"
ALL_FORMATS = ["mini.yaml", "mini.json", "mini.jsonl", "mini-faq.csv"]


def problems_of(path: Path, identifier: str | None = None) -> list[str]:
    with pytest.raises(GoldenSetError) as info:
        load_golden_set(path, identifier=identifier)
    return info.value.problems


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", ALL_FORMATS)
def test_every_format_loads_the_same_questions(name: str) -> None:
    golden = load_golden_set(FIXTURES / name)
    by_id = {q.id: q for q in golden.questions}
    assert [q.id for q in golden.questions] == ["refund-window", "reset-password", "none-weather"]
    refund = by_id["refund-window"]
    assert refund.expected_document_ids == ("billing/refunds.md", "billing/refunds-eu.md")
    assert refund.hard_class == "near-duplicate"
    assert refund.answer_gist == "30 days"
    assert by_id["reset-password"].form is QuestionForm.GAP
    assert by_id["reset-password"].hard_class is None
    assert by_id["none-weather"].expected_document_ids == ()


def test_every_format_gives_the_same_fingerprint() -> None:
    prints = {load_golden_set(FIXTURES / name).fingerprint for name in ALL_FORMATS}
    assert len(prints) == 1


def test_document_formats_carry_the_set_header() -> None:
    golden = load_golden_set(FIXTURES / "mini.yaml")
    assert (golden.identifier, golden.name, golden.corpus_revision) == (
        "mini.faq",
        "Mini FAQ",
        "r1",
    )
    assert golden.description.startswith("A tiny set")


def test_line_formats_take_the_identifier_from_the_file_name_or_the_option() -> None:
    assert load_golden_set(FIXTURES / "mini-faq.csv").identifier == "mini_faq"
    assert load_golden_set(FIXTURES / "mini.jsonl").identifier == "mini"
    assert load_golden_set(FIXTURES / "mini.jsonl", identifier="team.faq").identifier == "team.faq"
    # the option also overrides the identifier inside a document
    assert load_golden_set(FIXTURES / "mini.yaml", identifier="other.name").identifier == (
        "other.name"
    )


def test_csv_pipe_separator_strips_spaces(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "faq.csv",
        "id,question,form,expected_document_ids\nq1,Where?,match, a.md | b.md |c.md\n",
    )
    assert load_golden_set(path).questions[0].expected_document_ids == ("a.md", "b.md", "c.md")


def test_csv_from_a_spreadsheet_with_bom_and_crlf(tmp_path: Path) -> None:
    path = tmp_path / "faq.csv"
    path.write_bytes(b"\xef\xbb\xbfid,question,form\r\nq1,Where?,Match\r\nq2,How?,gap\r\n")
    golden = load_golden_set(path)
    assert [q.id for q in golden.questions] == ["q1", "q2"]


def test_csv_header_without_required_columns(tmp_path: Path) -> None:
    path = write(tmp_path, "faq.csv", "id,text\nq1,Where?\n")
    [problem] = problems_of(path)
    assert "line 1" in problem and "question, form" in problem


def test_csv_unknown_column_reported_with_row_problems(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "faq.csv",
        "id,question,form,expected_document_ids,notes\nq1,Where?,sometimes,a,hi\n",
    )
    problems = problems_of(path)
    assert any("unknown CSV column(s) notes" in p for p in problems)
    assert any(
        "question 'q1' (#1, line 2): field 'form': unknown form 'sometimes'" in p for p in problems
    )


def test_all_problems_of_a_yaml_file_at_once_with_set_question_field_and_line(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        "bad.yaml",
        """identifier: team.bad
questions:
  - id: "  "
    question: Blank id
    form: match
  - id: q2
    question: "   "
    form: match
    expected_document_ids: ["", a]
  - id: q3
    question: Fine text
    form: sometimes
    expected_document_ids: [a, a]
    hard_class: ""
  - id: q4
    question: First
    form: gap
  - id: q4
    question: Second
    form: gap
""",
    )
    problems = problems_of(path)
    src = f"{path} (set 'team.bad')"
    assert problems == [
        f"{src}: question #1 (line 3): field 'id': must not be empty or whitespace only",
        f"{src}: question 'q2' (#2, line 6): field 'question': must not be empty or whitespace only",
        f"{src}: question 'q2' (#2, line 6): field 'expected_document_ids': "
        "contains an empty document id",
        f"{src}: question 'q3' (#3, line 10): field 'form': unknown form 'sometimes'; "
        "use 'match' or 'gap'",
        f"{src}: question 'q3' (#3, line 10): field 'expected_document_ids': "
        "lists document id 'a' twice",
        f"{src}: question 'q3' (#3, line 10): field 'hard_class': "
        "must not be an empty string (leave it out instead)",
        f"{src}: question 'q4' (#5, line 18): duplicate question id 'q4' (first at question #4); "
        "give each question its own id",
    ]


def test_a_file_whose_only_problem_is_a_repeated_id_names_both_places(tmp_path: Path) -> None:
    rows = ['{"id": "q1", "question": "A?", "form": "match"}'] * 2
    rows[1] = rows[1].replace('"q1"', '" q1 "')  # ids are compared stripped
    path = write(tmp_path, "twice.jsonl", "\n".join(rows) + "\n")
    assert problems_of(path) == [
        f"{path} (set 'twice'): question 'q1' (#2, line 2): duplicate question id 'q1' (first at "
        "question #1); give each question its own id"
    ]


def test_error_text_lists_every_problem_and_is_input_error(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "bad.json",
        '{"identifier": "Bad Name", "questions": [{"id": "q1", "question": "", "form": "x"}]}',
    )
    with pytest.raises(GoldenSetError) as info:
        load_golden_set(path)
    err = info.value
    assert isinstance(err, InvalidInputError) and err.exit_code == 2
    assert str(err).startswith("3 problems in golden question set:")
    assert "field 'question'" in str(err)
    assert "field 'form'" in str(err)
    assert "'Bad Name' is not a valid identifier" in str(err)


def test_missing_identifier_and_empty_list_are_both_reported(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "name: nameless\nquestions: []\n")
    problems = problems_of(path)
    assert len(problems) == 2
    assert "field 'identifier' is missing" in problems[0]
    assert "the set has no questions" in problems[1]


def test_empty_question_list_names_the_set(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: team.empty\n")
    assert problems_of(path) == [
        f"{path} (set 'team.empty'): the set has no questions; add at least one"
    ]


def test_questions_not_a_list_and_unknown_set_field(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestion: oops\nquestions: {a: 1}\n")
    problems = problems_of(path)
    assert any("unknown set field(s) 'question'" in p for p in problems)
    assert any("'questions' must be a list" in p for p in problems)
    assert not any("has no questions" in p for p in problems)


def test_question_that_is_not_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestions:\n  - just text\n")
    assert problems_of(path) == [
        f"{path} (set 's'): question #1 (line 3): expected a mapping of question fields"
    ]


def test_missing_required_fields_and_unknown_question_field(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestions:\n  - id: q1\n    target: a\n")
    problems = problems_of(path)
    assert any("field 'question': is required" in p for p in problems)
    assert any("field 'form': is required" in p for p in problems)
    assert any("field 'target': unknown field" in p for p in problems)


def test_jsonl_reports_every_bad_line_and_every_bad_question(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "faq.jsonl",
        '{"id": "q1", "question": "ok", "form": "match"}\n'
        "{not json\n"
        '{"id": "q3", "question": "ok", "form": "nope"}\n'
        "[1, 2]\n",
    )
    problems = problems_of(path)
    assert len(problems) == 3
    assert (
        problems[0]
        == f"{path}: line 2: invalid JSON: Expecting property name enclosed in double quotes"
    )
    assert "question 'q3' (#2, line 3): field 'form'" in problems[1]
    assert "question #3 (line 4): expected a mapping" in problems[2]


JSONL_LINES = [
    '{"id": "q1", "question": "ok", "form": "match"}',
    '  {"id": "q2", "question": "ok", "form": "gap"}\t ',  # JSON whitespace around it
    '{"id": "q3"} trailing',  # extra data
    '{"id": "q4"}{"id": "q5"}',  # two documents on one line
    '\xa0{"id": "q6"}',  # not JSON whitespace: a blank for str.strip(), not for JSON
    '\ufeff{"id": "q7"}',  # a byte-order mark inside the file
    '{"id": "q8", "n": NaN, "big": 1e400}',  # what the json module accepts, it accepts
    '"just a string"',
    "[1, 2]",
    '{"id": "q9"',  # cut short
    "   ",
    "",
    '{"id": "caf\u00e9", "question": "\\u2028 escaped"}',
]


def test_jsonl_lines_parse_exactly_as_json_loads_parses_each(tmp_path: Path) -> None:
    """The loader decodes lines without json.loads' wrappers: values and messages stay its."""
    import json
    import math

    from retrieval_eval.golden.loaders import _read_jsonl

    path, text = tmp_path / "lines.jsonl", "\n".join(JSONL_LINES)
    rows, lines, problems = _read_jsonl(path, text)
    expected_rows, expected_lines, expected_problems = [], [], []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            expected_rows.append(json.loads(line))
            expected_lines.append(number)
        except json.JSONDecodeError as exc:
            expected_problems.append(f"{path}: line {number}: invalid JSON: {exc.msg}")
    assert (lines, problems) == (expected_lines, expected_problems)
    nan = [row.pop("n") for row in rows if isinstance(row, dict) and "n" in row]
    assert len(nan) == 1 and math.isnan(nan[0])
    for row in expected_rows:
        if isinstance(row, dict):
            row.pop("n", None)
    assert rows == expected_rows
    assert len(problems) == 5  # the cases above do reach both paths


def test_invalid_yaml_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "identifier: s\nquestions:\n  - id: [unclosed\n")
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: line ")
    assert "invalid YAML" in problem


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    path = write(tmp_path, "s.json", '{\n  "identifier": "s",\n  "questions": [,]\n}\n')
    [problem] = problems_of(path)
    assert problem.startswith(f"{path}: line 3, column ")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "s.yaml", "- a\n- b\n")
    assert "expected a set document" in problems_of(path)[0]


def test_unknown_suffix_and_missing_file(tmp_path: Path) -> None:
    assert "unknown set format '.txt'" in problems_of(write(tmp_path, "s.txt", "x"))[0]
    assert problems_of(tmp_path / "absent.yaml") == [f"{tmp_path / 'absent.yaml'}: no such file"]


def test_validate_set_data_without_a_file() -> None:
    golden = validate_set_data(
        {"identifier": "inline", "questions": [{"id": "a", "question": "b", "form": "gap"}]}
    )
    assert golden.questions[0].form is QuestionForm.GAP
    with pytest.raises(GoldenSetError, match=r"<data> \(set 'inline'\): question #1: field 'id'"):
        validate_set_data(
            {"identifier": "inline", "questions": [{"id": "", "question": "b", "form": "gap"}]}
        )


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_dump_then_load_round_trips(tmp_path: Path, suffix: str) -> None:
    golden = load_golden_set(FIXTURES / "mini.yaml")
    again = load_golden_set(dump_golden_set(golden, tmp_path / f"out{suffix}"))
    assert again == golden

"""Lone surrogates (``retrieval_eval/safety/surrogates.py``): refused where they enter, never a crash.

A JSON escape such as ``"\\ud800"`` decodes to a ``str`` no UTF-8 encoder accepts. Before, a set
holding one passed ``sets validate`` and ``run`` crashed in the fingerprint; a retriever's id
holding one crashed the JSON report and the PostgreSQL save; an exception text holding one
crashed the SQLite save.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from golden.test_loaders import problems_of, write

from retrieval_eval.evaluation.scoring import score_many, score_question
from retrieval_eval.golden.models import GoldenQuestion
from retrieval_eval.safety.surrogates import escaped, has_lone_surrogate, lone_surrogate

LONE = "\ud800"
QUESTION = {"id": "q1", "question": "Where?", "form": "match", "expected_document_ids": ["a"]}


def test_the_helpers() -> None:
    assert lone_surrogate("plain") is None and lone_surrogate("é 😀") is None
    assert lone_surrogate(f"x{LONE}y") == "'\\ud800'"
    assert has_lone_surrogate(["a", "b\udfff"]) and not has_lone_surrogate(["😀", "é"])
    assert escaped(f"x{LONE}y") == "x\\ud800y" and escaped("é") == "é"


def _set_after_a_good_question(row: dict, suffix: str) -> str:
    """A set file's text (.jsonl: the loader's fast path; .json) of a good question, then ``row``."""
    good = {**QUESTION, "id": "q0"}
    if suffix == ".jsonl":
        return json.dumps(good) + "\n" + json.dumps(row) + "\n"
    return json.dumps({"identifier": "s", "questions": [good, row]})


QUESTION_FIELDS = ["id", "question", "expected_document_ids", "hard_class", "answer_gist"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])  # .jsonl: the loader's fast path first
@pytest.mark.parametrize("field", QUESTION_FIELDS)
def test_a_question_field_with_a_lone_surrogate_is_a_problem_naming_it(
    tmp_path: Path, field: str, suffix: str
) -> None:
    row = dict(QUESTION)
    row[field] = [f"b{LONE}"] if field == "expected_document_ids" else f"text {LONE}"
    [problem] = problems_of(write(tmp_path, "s" + suffix, _set_after_a_good_question(row, suffix)))
    assert f"field '{field}'" in problem
    assert "lone surrogate ('\\ud800')" in problem and "write the character itself" in problem
    problem.encode("utf-8")  # the message itself is text


@pytest.mark.parametrize("field", ["name", "description", "corpus_revision"])
def test_a_set_field_with_a_lone_surrogate_is_a_problem_naming_it(
    tmp_path: Path, field: str
) -> None:
    text = json.dumps({"identifier": "s", field: f"x{LONE}", "questions": [QUESTION]})
    [problem] = problems_of(write(tmp_path, "s.json", text))
    assert f"field '{field}'" in problem and "lone surrogate" in problem


def test_pairs_and_other_scripts_are_text(tmp_path: Path) -> None:
    row = {**QUESTION, "question": "Wo ist \ud83d\ude00 — ça?"}  # json.dumps writes the pair
    path = write(tmp_path, "s.jsonl", json.dumps(row) + "\n")
    from retrieval_eval.golden.loaders import load_golden_set

    assert load_golden_set(path).questions[0].question == "Wo ist 😀 — ça?"


def test_score_many_names_the_question_whose_kept_id_is_no_text() -> None:
    questions = [GoldenQuestion(**{**QUESTION, "id": name}) for name in ("fine", "raises", "x")]
    with pytest.raises(ValueError, match=r"question 'raises' holds id 'c\\ud800' at position 2"):
        score_many(questions, [["a"], ["a", "a", f"c{LONE}"], ["a"]])
    with pytest.raises(ValueError, match=r"question 'fine' holds id 'c\\ud800' at position 1"):
        score_question(questions[0], ["a", f"c{LONE}"])  # one question: the same rule
    # an id past the kept depth is never stored or shown: no error
    assert score_many(questions[:1], [["a", "b", "c", f"d{LONE}"]])[0].retrieved == ["a", "b", "c"]


def test_a_file_name_that_is_not_utf8_names_the_set_escaped(tmp_path: Path) -> None:
    # the name is documentation (the file's stem): escaped, where it used to be refused as
    # "field 'name' contains a lone surrogate", which named no field of the file
    path = Path(os.fsdecode(bytes(tmp_path) + b"/faq_\xff.jsonl"))
    path.write_text(json.dumps(QUESTION) + "\n", encoding="utf-8")
    from retrieval_eval.golden.loaders import load_golden_set

    loaded = load_golden_set(path)
    assert (loaded.identifier, loaded.name) == ("faq", "faq_\\udcff")
    loaded.fingerprint.encode("utf-8")


def test_a_question_key_that_is_not_text_is_named_and_the_rest_still_checked(
    tmp_path: Path,
) -> None:
    row = {**QUESTION, f"hard{LONE}": "x", "question": " "}
    [key, blank] = problems_of(write(tmp_path, "s.jsonl", json.dumps(row) + "\n"))
    assert "field 'hard\\ud800': unknown field (its name holds a lone surrogate" in key
    assert "field 'question': must not be empty" in blank


TEXT_FIELDS = ["question", "hard_class", "answer_gist"]


@pytest.mark.parametrize("suffix", [".jsonl", ".json"])
@pytest.mark.parametrize("field", TEXT_FIELDS)
def test_a_nul_character_in_a_text_field_is_a_problem_naming_it(
    tmp_path: Path, field: str, suffix: str
) -> None:
    """No store keeps a NUL (PostgreSQL text cannot): refused where it enters, as a surrogate is,
    instead of an exit 3 "cannot use the result store" after the run."""
    row = {**QUESTION, field: "text \x00 here"}
    [problem] = problems_of(write(tmp_path, "s" + suffix, _set_after_a_good_question(row, suffix)))
    assert f"field '{field}'" in problem and "holds a NUL character (\\x00)" in problem
    assert problem.endswith("remove it"), problem


@pytest.mark.parametrize("field", ["name", "description", "corpus_revision"])
def test_a_set_field_with_a_nul_character_is_a_problem_naming_it(
    tmp_path: Path, field: str
) -> None:
    text = json.dumps({"identifier": "s", field: "x\x00", "questions": [QUESTION]})
    [problem] = problems_of(write(tmp_path, "s.json", text))
    assert f"field '{field}'" in problem and "NUL character" in problem

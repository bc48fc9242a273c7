"""Judgments files: written with empty grades, filled in, read back with line-numbered errors,
merged per pair with the raters' agreement and conflicts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.labels.judgments import Judgment, read_judgments, summarise, write_judgments


@pytest.mark.parametrize("suffix", [".jsonl", ".csv"])
def test_a_pool_round_trips_with_empty_grades(tmp_path: Path, suffix: str) -> None:
    rows = [
        Judgment(question_id="q1", document_id="d1", source="bm25 #2"),
        Judgment(question="how do refunds work", document_id="d9", source="replay 3: after #1"),
    ]
    path = tmp_path / f"pool{suffix}"
    assert write_judgments(rows, path) == 2
    assert read_judgments(path) == rows


def test_bad_rows_are_named_by_line(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    path.write_text(
        json.dumps({"question_id": "q1", "document_id": "d1", "grade": 2})
        + "\n\n"
        + json.dumps({"question_id": "q1", "document_id": "d2", "grade": 7})
        + "\n"
        + json.dumps({"document_id": "d3", "grade": 1})
        + "\n"
        + json.dumps({"question_id": "q1", "grade": 1, "colour": "red"})
        + "\n"
    )
    with pytest.raises(GoldenSetError) as raised:
        read_judgments(path)
    problems = "\n".join(raised.value.problems)
    assert f"{path}: line 3: grade:" in problems and "0 to 3" in problems
    assert f"{path}: line 4: row: give 'question_id'" in problems
    assert f"{path}: line 5: document_id: Field required" in problems
    assert f"{path}: line 5: colour: Extra inputs are not permitted" in problems
    csv_path = tmp_path / "j.csv"
    csv_path.write_text("question_id,document_id,grade\nq1,d1,x\n")
    with pytest.raises(GoldenSetError, match=r"line 2: grade:"):
        read_judgments(csv_path)


def test_summary_merges_by_median_and_lists_conflicts() -> None:
    rows = [
        Judgment(question_id="q1", document_id="d1", grade=3, rater="ann"),
        Judgment(question_id="q1", document_id="d1", grade=2, rater="bob"),
        Judgment(question_id="q1", document_id="d2", grade=0, rater="ann"),
        Judgment(question_id="q1", document_id="d2", grade=2, rater="bob"),
        Judgment(question_id="q2", document_id="d3", grade=1, rater="ann"),
        Judgment(question_id="q2", document_id="d3", grade=1, rater="bob"),
        Judgment(question_id="q2", document_id="d4"),
    ]
    summary = summarise(rows)
    assert summary.merged == {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1}
    assert summary.open == [("q2", "d4")]
    assert summary.raters == ["ann", "bob"]
    assert [(c.question_key, c.document_id) for c in summary.conflicts] == [("q1", "d2")]
    assert summary.kappa is not None and summary.alpha is not None

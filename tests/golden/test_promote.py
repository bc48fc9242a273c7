"""sets promote: the merge rule applied (added, removed, regraded, new questions), the
changelog, and a version refused (exit 2, nothing written) unless --force."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from retrieval_eval import load_golden_set
from retrieval_eval.cli import cli
from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.judgments import Judgment, write_judgments
from retrieval_eval.labels.promote import new_question_id, promote


def _set() -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="small",
        questions=[
            GoldenQuestion(id="q1", question="refund window?", form="match",
                           expected_document_ids=("a", "b")),
            GoldenQuestion(id="q2", question="reset password?", form="gap",
                           expected_document_ids=("c",)),
        ],
    )  # fmt: skip


def _row(qid: str | None, doc: str, grade: int, rater: str, text: str | None = None) -> Judgment:
    return Judgment(question_id=qid, question=text, document_id=doc, grade=grade, rater=rater)


def test_the_merged_grades_add_remove_and_regrade_and_the_changelog_says_so() -> None:
    rows = [
        _row("q1", "x", 2, "ann"), _row("q1", "x", 3, "bob"), _row("q1", "x", 1, "cat"),  # median 2
        _row("q1", "b", 0, "ann"), _row("q1", "b", 1, "bob"),  # lower middle: 0, removed
        _row("q2", "c", 3, "ann"),  # regraded 1 -> 3
        _row("q2", "z", 0, "ann"),  # not relevant, not labelled: no change
        _row(None, "d", 2, "bob", text="Can I pay by invoice?"),
        _row(None, "e", 0, "bob", text="Is there a dark mode?"),  # nothing relevant: not added
    ]  # fmt: skip
    done = promote(_set(), rows, today=date(2026, 12, 1))
    q1, q2, new = done.golden.questions
    # grade 0 stays in the set as judged not relevant, a removed target and an unlabelled one
    assert (q1.expected_document_ids, q1.grades) == (("a", "x"), {"b": 0, "x": 2})
    assert (q2.expected_document_ids, q2.grades) == (("c",), {"c": 3, "z": 0})
    assert (new.id, new.form.value, new.expected_document_ids) == (
        "can-i-pay-by-invoice",
        "gap",
        ("d",),
    )
    assert done.golden.version == 2 and done.not_added == ["Is there a dark mode?"]
    assert done.entry.model_dump() == {
        "version": 2,
        "date": "2026-12-01",
        "raters": ("ann", "bob", "cat"),
        "added": ("q1: x (grade 2)", "can-i-pay-by-invoice: d (grade 2)"),
        "removed": ("q1: b (judged not relevant)",),
        "regraded": ("q2: c 1 -> 3",),
        "not_relevant": ("q2: z",),
        "questions_added": ("can-i-pay-by-invoice: Can I pay by invoice?",),
        "note": done.entry.note,
    }
    assert "Krippendorff's alpha" in (done.entry.note or "") and not done.problems
    assert done.golden.fingerprint != _set().fingerprint


def test_unknown_question_ids_are_named_and_generated_ids_never_collide() -> None:
    with pytest.raises(GoldenSetError, match="question 'nope', which set 'small' does not have"):
        promote(_set(), [_row("nope", "x", 1, "ann")])
    assert new_question_id("Refund window?", {"refund-window"}) == "refund-window-2"


def _files(tmp_path: Path, rows: list[Judgment]) -> tuple[Path, Path, Path]:
    set_file = tmp_path / "small.yaml"
    data = _set().model_dump(mode="json", exclude_none=True)
    set_file.write_text("# a comment promote does not keep\n" + yaml.safe_dump(data))
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({"sets": ["small.yaml"]}))
    judgments = tmp_path / "judged.jsonl"
    write_judgments(rows, judgments)
    return set_file, config, judgments


def test_a_version_with_errors_is_refused_unless_forced(tmp_path: Path) -> None:
    # q2's only target judged not relevant: q2 would become a no-result question
    set_file, config, judgments = _files(tmp_path, [_row("q2", "c", 0, "ann")])
    before = set_file.read_text()
    args = ["sets", "promote", "small", "--judgments", str(judgments), "--config", str(config)]
    refused = CliRunner().invoke(cli, args)
    assert refused.exit_code == 2
    assert "every target was judged not relevant" in refused.output
    assert "version 2 of 'small' not written" in refused.output
    assert set_file.read_text() == before
    forced = CliRunner().invoke(cli, [*args, "--force"])
    assert forced.exit_code == 0, forced.output
    written = load_golden_set(set_file)
    assert written.version == 2 and written.questions[1].expected_document_ids == ()
    assert "(written despite lint errors: --force)" in forced.output


def test_output_goes_elsewhere_and_a_csv_target_is_refused(tmp_path: Path) -> None:
    set_file, config, judgments = _files(tmp_path, [_row("q1", "x", 1, "ann")])
    base = ["sets", "promote", "small", "--judgments", str(judgments), "--config", str(config)]
    out = tmp_path / "v2.yaml"
    ok = CliRunner().invoke(cli, [*base, "--output", str(out)])
    assert ok.exit_code == 0, ok.output
    assert load_golden_set(out).questions[0].expected_document_ids == ("a", "b", "x")
    assert load_golden_set(set_file).version is None  # the set's own file is untouched
    bad = CliRunner().invoke(cli, [*base, "--output", str(tmp_path / "v2.csv")])
    assert bad.exit_code == 2 and "give --output FILE.yaml" in bad.output

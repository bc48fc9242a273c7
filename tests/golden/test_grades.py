"""Graded labels: ``grades: {doc-id: 0..3}`` beside or instead of ``expected_document_ids``."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_eval.errors import GoldenSetError
from retrieval_eval.golden.fingerprint import labels_fingerprint
from retrieval_eval.golden.loaders import validate_set_data
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet


def question(**fields: Any) -> GoldenQuestion:
    return GoldenQuestion.model_validate(
        {"id": "q1", "question": "Refunds?", "form": "match", **fields}
    )


def test_expected_ids_mean_grade_one_and_grades_win_over_them() -> None:
    q = question(expected_document_ids=["a", "b"], grades={"b": 0, "c": 3, " d ": 2})
    assert q.relevance == {"a": 1, "b": 0, "c": 3, "d": 2}
    assert q.judged_ids == ("a", "b", "c", "d")
    assert q.targets() == q.targets(1) == ("a", "c", "d")
    assert q.targets(2) == ("c", "d")
    assert q.targets(3) == ("c",)
    assert q.is_graded and not q.is_no_result


def test_grades_alone_and_no_grades() -> None:
    assert question(grades={"a": 2}).targets() == ("a",)
    plain = question(expected_document_ids=["a"])
    assert plain.grades is None and not plain.is_graded
    assert plain.targets() == ("a",) and plain.targets(2) == ()
    assert question(grades={}).grades is None  # an empty mapping grades nothing


def test_a_question_judged_only_not_relevant_has_no_target() -> None:
    q = question(grades={"a": 0})
    assert q.judged_ids == ("a",) and q.targets() == () and q.is_no_result


@pytest.mark.parametrize(
    "grades,message",
    [
        ({"a": -1}, "field 'grades': the grade of document 'a' must be an integer >= 0"),
        ({"a": True}, "not True"),
        ({"a": "2"}, "not '2'"),
        ({"a": 2.0}, "not 2.0"),
        ({"": 1}, "field 'grades': contains an empty document id"),
        ({"a": 1, " a": 2}, "grades document id 'a' twice (ids are stripped)"),
        ({"a\x01": 1}, "document id 'a\\x01' contains a control character"),
        ({1: 2}, "document id 1 must be text, not int (quote it)"),
        (["a"], "must be a mapping of document id to grade, e.g. {doc-1: 2}, not list"),
    ],
)
def test_bad_grades_are_named_with_the_question_and_field(grades: Any, message: str) -> None:
    data = {
        "identifier": "s",
        "questions": [{"id": "q1", "question": "x", "form": "gap", "grades": grades}],
    }
    with pytest.raises(GoldenSetError) as caught:
        validate_set_data(data, source="set.yaml")
    (problem,) = caught.value.problems
    assert problem.startswith("set.yaml (set 's'): question 'q1' (#1): ")
    assert message in problem


def _fingerprint(**fields: Any) -> str:
    data = {
        "identifier": "s",
        "questions": [{"id": "q1", "question": "x", "form": "gap", **fields}],
    }
    return labels_fingerprint(GoldenQuestionSet.model_validate(data))


def test_the_fingerprint_covers_grades_and_keeps_ungraded_sets() -> None:
    plain = _fingerprint(expected_document_ids=["a", "b"])
    # grade 1 everywhere is what the list already says: the same labels, the same fingerprint
    assert _fingerprint(grades={"a": 1, "b": 1}) == plain
    assert _fingerprint(expected_document_ids=["a"], grades={"b": 1}) == plain
    regraded = _fingerprint(expected_document_ids=["a", "b"], grades={"b": 2})
    assert regraded != plain
    assert _fingerprint(grades={"a": 1, "b": 3}) != regraded
    # a judged-not-relevant document changes no figure: nor the fingerprint (a BEIR qrels' 0
    # rows keep a re-imported set's fingerprint); judging a target 0 removes a target
    assert _fingerprint(expected_document_ids=["a", "b"], grades={"c": 0}) == plain
    assert _fingerprint(expected_document_ids=["a", "b"], grades={"b": 0}) != plain
    assert _fingerprint(expected_document_ids=["a", "b"], grades={"b": 2, "c": 0}) == regraded
    # judged without a target: it counts 0 in recall, MRR and nDCG, where an unjudged no-result
    # question does not count, so the two differ; which documents were judged 0 does not matter
    judged = _fingerprint(grades={"c": 0})
    assert judged != _fingerprint() and judged == _fingerprint(grades={"c": 0, "d": 0})


def _graded_set() -> GoldenQuestionSet:
    return GoldenQuestionSet.model_validate(
        {
            "identifier": "graded",
            "questions": [
                # only graded: a target at grade 2, one judged not relevant
                {"id": "q1", "question": "Refund window?", "form": "match",
                 "grades": {"refunds.md": 2, "refunds-eu.md": 0}},
                {"id": "q2", "question": "Password?", "form": "match", "grades": {"gone.md": 3}},
            ],
        }
    )  # fmt: skip


def test_dead_labels_read_the_graded_targets_not_the_judged_zeros() -> None:
    from retrieval_eval.evaluation.labels import find_dead_labels

    class Known:
        identifier = "known"
        existing_ids_source = "test index"

        def retrieve(self, question: str, limit: int) -> list[str]:
            return []

        def existing_ids(self, ids: Any) -> set[str]:
            self.asked = sorted(ids)
            return {"refunds.md"}

    retriever = Known()
    found = find_dead_labels(_graded_set(), retriever)
    assert retriever.asked == ["gone.md", "refunds.md"]  # refunds-eu.md (grade 0) is no target
    assert found.dead_ids == ["gone.md"] and found.stale_questions == ["q2"]


def test_completeness_takes_graded_targets_and_never_offers_a_judged_document() -> None:
    import random

    from retrieval_eval.config.models import LintOptions
    from retrieval_eval.lint.completeness import check_completeness
    from retrieval_eval.retrievers.corpus import Document

    rng = random.Random(1)
    page = " ".join(f"w{rng.randint(0, 60)}" for _ in range(200))
    copy = " ".join(page.split()[:190] + ["changed"] * 10)
    docs = [Document("refunds.md", "", page), Document("refunds-eu.md", "", copy),
            Document("refunds-uk.md", "", copy), Document("gone.md", "", "other words")]  # fmt: skip
    found = check_completeness(_graded_set(), docs, LintOptions())
    # the grade-2 target's near copies: the one judged 0 is not a candidate, the other is
    assert [(f.question_ids, f.doc_ids) for f in found] == [(["q1"], ["refunds-uk.md"])]


def test_export_writes_every_judged_grade_and_import_reads_it_back(tmp_path: Any) -> None:
    from retrieval_eval.golden.exporters import qrels_lines, topics_lines, write_lines
    from retrieval_eval.golden.importers import import_trec

    golden = _graded_set()
    assert qrels_lines(golden) == ["q1 0 refunds.md 2", "q1 0 refunds-eu.md 0", "q2 0 gone.md 3"]
    qrels = write_lines(qrels_lines(golden), tmp_path / "g.qrels")
    topics = write_lines(topics_lines(golden), tmp_path / "g.tsv")
    again = import_trec(topics, qrels, identifier="graded")
    assert [q.relevance for q in again.questions] == [q.relevance for q in golden.questions]
    assert again.fingerprint == golden.fingerprint
    # an ungraded set exports as it always did: one "1" line per target
    plain = GoldenQuestionSet.model_validate(
        {"identifier": "p", "questions": [
            {"id": "a", "question": "x", "form": "gap", "expected_document_ids": ["d1", "d2"]}
        ]}
    )  # fmt: skip
    assert qrels_lines(plain) == ["a 0 d1 1", "a 0 d2 1"]


def test_import_keeps_codes_above_three_and_maps_codes_first(tmp_path: Any) -> None:
    from retrieval_eval.golden.importers import import_trec

    topics = tmp_path / "t.tsv"
    topics.write_text("1\tfirst\n2\tsecond\n")
    qrels = tmp_path / "q.qrels"
    qrels.write_text("1 0 a 5\n1 0 b 1\n1 0 c -1\n2 0 d 2\n")
    kept = import_trec(topics, qrels, identifier="t")
    # the code is the grade (nDCG's gain, as trec_eval reads it), however high
    assert [q.relevance for q in kept.questions] == [{"a": 5, "b": 1, "c": 0}, {"d": 2}]
    assert kept.questions[0].expected_document_ids == ("a", "b")  # the targets, as before
    mapped = import_trec(topics, qrels, identifier="t", grade_map={5: 3, 2: 1, 1: 0})
    assert [q.relevance for q in mapped.questions] == [{"a": 3, "b": 0, "c": 0}, {"d": 1}]
    assert (
        import_trec(topics, qrels, identifier="t", grade_map={5: 7}).questions[0].relevance["a"]
        == 7
    )
    with pytest.raises(Exception, match="code 5 maps to -1; a grade is an integer >= 0"):
        import_trec(topics, qrels, identifier="t", grade_map={5: -1})


def test_csv_sets_take_a_grades_column(tmp_path: Any) -> None:
    from retrieval_eval.golden.loaders import load_golden_set

    path = tmp_path / "graded.csv"
    path.write_text(
        "id,question,form,expected_document_ids,grades\n"
        "q1,Refunds?,match,a.md,b.md=3|c.md=0\n"
        "q2,Plain?,gap,d.md,\n"
    )
    golden = load_golden_set(path)
    assert [q.relevance for q in golden.questions] == [
        {"a.md": 1, "b.md": 3, "c.md": 0},
        {"d.md": 1},
    ]
    assert golden.questions[1].grades is None
    path.write_text("id,question,form,grades\nq1,x,match,b.md\nq2,y,gap,b.md=-9\n")
    with pytest.raises(GoldenSetError) as caught:
        load_golden_set(path)
    first, second = caught.value.problems
    assert (
        "line 2: field 'grades': 'b.md' is not doc-id=grade; write grades as a.md=2|b.md=0" in first
    )
    assert (
        "question 'q2'" in second
        and "the grade of document 'b.md' must be an integer >= 0" in second
    )


def test_a_copy_with_other_labels_gets_its_own_grades() -> None:
    q = question(expected_document_ids=["a"], grades={"b": 2})
    assert q.targets(2) == ("b",)  # relevance computed and cached
    regraded = q.model_copy(update={"grades": {"b": 1, "c": 3}})
    assert regraded.relevance == {"a": 1, "b": 1, "c": 3} and regraded.targets(2) == ("c",)
    assert q.model_copy().relevance == q.relevance

"""Importing BEIR folders and TREC topics/qrels into golden sets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.errors import GoldenSetError, InvalidInputError
from retrieval_eval.golden.exporters import qrels_lines, topics_lines, write_lines
from retrieval_eval.golden.importers import (
    import_beir,
    import_trec,
    read_forms,
    read_qrels,
    read_topics,
)
from retrieval_eval.golden.loaders import dump_golden_set, load_golden_set
from retrieval_eval.golden.models import GoldenQuestionSet, QuestionForm


def targets(golden: GoldenQuestionSet) -> int:
    return sum(len(q.expected_document_ids) for q in golden.questions)


def beir_folder(tmp_path: Path, qrels: str, split: str = "test") -> Path:
    folder = tmp_path / "mini"
    (folder / "qrels").mkdir(parents=True)
    queries = [
        {"_id": "1", "text": "How do refunds work?", "metadata": {"topic": "billing"}},
        {"_id": "2", "text": "Reset a password", "metadata": {"topic": ""}},
        {"_id": "3", "text": "Only judged irrelevant", "metadata": {}},
        {"_id": "4", "text": "Not judged in this split", "category": "top-level"},
        {"_id": "5", "text": "Top level class", "category": "top-level"},
    ]
    (folder / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (folder / "qrels" / f"{split}.tsv").write_text(qrels)
    return folder


QRELS = "query-id\tcorpus-id\tscore\n1\tr1\t1\n1\tr2\t2\n1\tz\t0\n2\tp1\t1\n3\tx\t0\n3\ty\t-1\n5\tq\t1\n"


def test_scifact_test_split_gives_300_questions_and_339_targets() -> None:
    golden = import_beir(shared_collection("scifact"), split="test", identifier="scifact.test")
    assert len(golden.questions) == 300
    assert targets(golden) == 339
    assert {q.form for q in golden.questions} == {QuestionForm.MATCH}
    assert golden.questions[0].id == "1"  # queries.jsonl order, filtered to the split
    assert golden.identifier == "scifact.test" and "split 'test'" in golden.description


def test_cranfield_negative_codes_never_become_targets() -> None:
    folder = shared_collection("cranfield")
    every_code = import_beir(folder, split="test_all_codes", identifier="cran.all")
    positive = import_beir(folder, split="test", identifier="cran.pos")
    minus_one = {
        (qid, doc)
        for qid, docs in read_qrels(folder / "qrels/test_all_codes.tsv").items()
        for doc, rel in docs.items()
        if rel == -1
    }
    assert len(minus_one) == 225
    pairs = {(q.id, d) for q in every_code.questions for d in q.expected_document_ids}
    assert not pairs & minus_one
    assert targets(every_code) == targets(positive) == 1612
    assert [q.expected_document_ids for q in every_code.questions] == [
        q.expected_document_ids for q in positive.questions
    ]
    # a higher floor keeps fewer targets, and still never the -1 codes
    assert targets(import_beir(folder, split="test_all_codes", min_relevance=3)) == 734 + 363


def test_min_relevance_untargeted_queries_forms_and_hard_class(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, QRELS)
    forms = tmp_path / "forms.yaml"
    forms.write_text("'1': GAP\n'99': gap\n")
    golden = import_beir(
        folder, identifier="mini", forms=read_forms(forms), hard_class_from="topic"
    )
    by_id = {q.id: q for q in golden.questions}
    assert list(by_id) == ["1", "2", "3", "5"]  # 4 is not in the split
    # 3 has judgments and no target: kept with them (trec_eval counts it), a no-result question
    assert by_id["3"].relevance == {"x": 0, "y": 0} and by_id["3"].targets() == ()
    assert by_id["1"].expected_document_ids == ("r1", "r2")
    assert by_id["1"].form is QuestionForm.GAP and by_id["2"].form is QuestionForm.MATCH
    assert by_id["1"].hard_class == "billing" and by_id["2"].hard_class is None
    assert "1 judged query without a target (0 in recall, MRR and nDCG)" in golden.description
    loose = import_beir(folder, identifier="mini", min_relevance=0)
    assert {q.id: len(q.expected_document_ids) for q in loose.questions} == {
        "1": 3,
        "2": 1,
        "3": 1,
        "5": 1,
    }
    top_level = import_beir(folder, identifier="mini", hard_class_from="category")
    assert [q.hard_class for q in top_level.questions] == [None, None, None, "top-level"]


def test_identifier_defaults_to_folder_and_split(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, QRELS, split="dev")
    assert import_beir(folder, split="dev").identifier == "mini.dev"


def test_forms_from_csv_and_tsv(tmp_path: Path) -> None:
    (tmp_path / "f.csv").write_text("id,form\n1,gap\n2,Match\n")
    (tmp_path / "f.tsv").write_text("id\tform\n1\tgap\n")
    assert read_forms(tmp_path / "f.csv") == {"1": QuestionForm.GAP, "2": QuestionForm.MATCH}
    assert read_forms(tmp_path / "f.tsv") == {"1": QuestionForm.GAP}
    (tmp_path / "bad.csv").write_text("id,form\n1,gap\n2,fuzzy\n")
    with pytest.raises(InvalidInputError, match=r"bad.csv: line 3: unknown form 'fuzzy'"):
        read_forms(tmp_path / "bad.csv")
    (tmp_path / "nohead.csv").write_text("1,gap\n")
    with pytest.raises(InvalidInputError, match=r"needs columns 'id' and 'form'"):
        read_forms(tmp_path / "nohead.csv")


# --- hostile input: the set files' limits and id rules hold for imports too --------------------


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[" * 100_000, r"queries.jsonl: line 2: expected a JSON object .*\(nested too deep\)"),
        ('{"_id": 9' + "9" * 4_400 + ', "text": "x"}', r"queries.jsonl: line 2: expected a JSON"),
    ],
)
def test_hostile_query_lines_are_errors_at_their_line(
    tmp_path: Path, line: str, message: str
) -> None:
    folder = beir_folder(tmp_path, QRELS)
    first = (folder / "queries.jsonl").read_text().splitlines()[0]
    (folder / "queries.jsonl").write_text(f"{first}\n{line}\n")
    with pytest.raises(InvalidInputError, match=message) as info:
        import_beir(folder, identifier="mini")
    assert len(str(info.value)) < 600


def test_query_ids_with_control_characters_are_refused(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, "q\x1bx\tr1\t1\n")
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q\x1bx", "text": "Where?"}) + "\n")
    with pytest.raises(GoldenSetError, match=r"field 'id': contains a control character"):
        import_beir(folder, identifier="mini")


def test_forms_files_have_the_set_files_limits(tmp_path: Path) -> None:
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n'1': *b\n"
    (tmp_path / "bomb.yaml").write_text(bomb)
    with pytest.raises(InvalidInputError, match="YAML anchors and aliases are not allowed"):
        read_forms(tmp_path / "bomb.yaml")
    (tmp_path / "list.yaml").write_text(f"'1': [{', '.join(['x' * 1000] * 100)}]\n")
    with pytest.raises(InvalidInputError, match=r"question '1': unknown form \[") as info:
        read_forms(tmp_path / "list.yaml")
    assert len(str(info.value)) < 600
    (tmp_path / "huge.csv").write_text(f"id,form\n1,{'x' * 131_073}\n")
    with pytest.raises(InvalidInputError, match=r"huge.csv: line 2: invalid CSV: field larger"):
        read_forms(tmp_path / "huge.csv")


@pytest.mark.parametrize(
    ("qrels", "message"),
    [
        ("1\tr1\n", r"test.tsv: line 1: expected 'qid docid relevance'"),
        ("1\tr1\tvery\n", r"line 1: relevance 'very' is not a number"),
        ("query-id\tcorpus-id\tscore\n", r"holds no judgments"),
        ("1\tr1\t1\n42\tx\t1\n", r"1 query id\(s\) have judgments but no query text, e.g. '42'"),
        ("1\tz\t0\n", r"no query has a judgment with relevance >= 1"),
    ],
)
def test_bad_qrels_name_file_and_line(tmp_path: Path, qrels: str, message: str) -> None:
    with pytest.raises(InvalidInputError, match=message):
        import_beir(beir_folder(tmp_path, qrels), identifier="mini")


def test_missing_split_lists_the_splits_there(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, QRELS, split="train")
    with pytest.raises(
        InvalidInputError, match=r"qrels/test.tsv: no such file.*splits here: train"
    ):
        import_beir(folder, split="test")


def test_hard_class_field_with_structured_value_is_an_error() -> None:
    with pytest.raises(InvalidInputError, match=r"field 'metadata' holds a dict"):
        import_beir(shared_collection("scifact"), hard_class_from="metadata")


def test_trec_sgml_topics_and_four_column_qrels(tmp_path: Path) -> None:
    topics = tmp_path / "topics.txt"
    topics.write_text(
        "<top>\n<num> Number: 401\n<title> foreign minorities, Germany\n\n"
        "<desc> Description:\nWhat language and cultural differences impede the integration?\n"
        "<narr> Narrative:\nA relevant document will focus on...\n</top>\n\n"
        "<top>\n<num> Number: 402 <title> behavioral genetics\n<desc> Description: genes?\n</top>\n"
    )
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("401 0 FBIS3-10082 1\n401 0 FBIS3-10169 0\n402 0 LA010189-0001 2\n")
    golden = import_trec(topics, qrels, "robust.mini")
    assert [(q.id, q.question, q.expected_document_ids) for q in golden.questions] == [
        ("401", "foreign minorities, Germany", ("FBIS3-10082",)),
        ("402", "behavioral genetics", ("LA010189-0001",)),
    ]
    described = import_trec(topics, qrels, "robust.desc", topic_field="desc")
    assert described.questions[0].question.startswith("What language and cultural")
    assert read_topics(topics)["401"]["narr"].startswith("Narrative: A relevant document")
    with pytest.raises(InvalidInputError, match=r"topic #2: needs <num> and a non-empty <narr>"):
        read_topics(topics, field="narr")


def test_qrels_comment_lines_are_skipped_as_trec_eval_skips_them(tmp_path: Path) -> None:
    """trec_eval's test/qrels.test.with-comments: a line starting with '#' is a comment; a '#'
    inside a document id is part of the id. Without the comments, the same qrels."""
    plain = tmp_path / "plain.qrels"
    plain.write_text("301 0 CR93E-10279 0\n301 0 CR#93E-1860 1\n")
    commented = tmp_path / "commented.qrels"
    commented.write_text(
        "# comment here\n301 0 CR93E-10279 0\n# comment in docno\n301 0 CR#93E-1860 1\n"
    )
    assert (
        read_qrels(commented) == read_qrels(plain) == {"301": {"CR93E-10279": 0, "CR#93E-1860": 1}}
    )
    (tmp_path / "only.qrels").write_text("# nothing but a comment\n")
    with pytest.raises(InvalidInputError, match=r"only.qrels: the qrels file holds no judgments"):
        read_qrels(tmp_path / "only.qrels")


def test_tsv_topics_errors(tmp_path: Path) -> None:
    bad = tmp_path / "t.tsv"
    bad.write_text("1\tfine\nno tab here\n")
    with pytest.raises(InvalidInputError, match=r"t.tsv: line 2: expected 'qid<TAB>query text'"):
        read_topics(bad)
    bad.write_text("1\ta\n1\tb\n")
    with pytest.raises(InvalidInputError, match=r"line 2: topic '1' appears twice"):
        read_topics(bad)


def test_round_trip_beir_to_trec_files_and_back(tmp_path: Path) -> None:
    original = import_beir(shared_collection("scifact"), split="test", identifier="scifact")
    qrels = write_lines(qrels_lines(original), tmp_path / "scifact.qrels")
    topics = write_lines(topics_lines(original), tmp_path / "scifact.topics.tsv")
    again = import_trec(topics, qrels, "scifact")
    assert again.questions == original.questions
    assert again.fingerprint == original.fingerprint


def test_round_trip_through_the_set_file(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path, QRELS)
    original = import_beir(folder, identifier="mini", hard_class_from="topic")
    for name in ("mini.yaml", "mini.json"):
        loaded = load_golden_set(dump_golden_set(original, tmp_path / name))
        assert loaded == original

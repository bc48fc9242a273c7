"""The run_file adapter: TREC and JSONL runs, matched by question id, ordered as trec_eval does."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from helpers import shared_collection

from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.retrievers.registry import RetrieverRegistry
from retrieval_eval.retrievers.run_file import RunFileRetriever, read_run


def _set(*questions: tuple[str, list[str]]) -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="t",
        questions=[
            GoldenQuestion(
                id=qid, question=f"question {qid}", form="match", expected_document_ids=targets
            )
            for qid, targets in questions
        ],
    )


def test_trec_ties_follow_trec_eval_score_then_docid_descending(tmp_path: Path) -> None:
    run = tmp_path / "tie.run"
    # the rank column disagrees with the scores on purpose: trec_eval ignores it
    run.write_text(
        "q1 Q0 a 1 1.0 t\nq1 Q0 c 2 2.0 t\nq1 Q0 b 3 2.0 t\nq1 Q0 d 4 0.5 t\n", encoding="utf-8"
    )
    assert read_run(run)["q1"] == ["c", "b", "a", "d"]
    assert read_run(run, order="rank")["q1"] == ["a", "c", "b", "d"]
    assert read_run(run, order="file")["q1"] == ["a", "c", "b", "d"]


def test_ties_agree_with_pytrec_eval(tmp_path: Path) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    run = tmp_path / "tie.run"
    run.write_text("q1 Q0 b 1 1.0 t\nq1 Q0 a 2 1.0 t\nq2 Q0 a 1 1.0 t\nq2 Q0 b 2 1.0 t\n")
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    scores = {
        qid: {d: float(s) for d, s in docs.items()}
        for qid, docs in {"q1": {"b": 1.0, "a": 1.0}, "q2": {"a": 1.0, "b": 1.0}}.items()
    }
    theirs = pytrec_eval.RelevanceEvaluator(qrels, {"success_1"}).evaluate(scores)
    result = evaluate(_set(("q1", ["a"]), ("q2", ["b"])), RunFileRetriever.from_file(run))
    ours = {q.id: q.top1_hit for q in result.questions}
    assert ours == {qid: bool(m["success_1"]) for qid, m in theirs.items()}
    assert ours == {"q1": False, "q2": True}  # doc id descending: 'b' before 'a'


def test_jsonl_run_and_missing_question_gets_empty_ranking(tmp_path: Path) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(
        json.dumps({"question_id": "q1", "ranking": ["x", "a"]})
        + "\n\n"
        + json.dumps({"question_id": 7, "ranking": []})
        + "\n",
        encoding="utf-8",
    )
    golden = _set(("q1", ["a"]), ("7", []), ("absent", []), ("absent2", ["a"]))
    result = evaluate(golden, RunFileRetriever.from_file(run))
    hits = {q.id: (q.top1_hit, q.top3_hit, q.error) for q in result.questions}
    assert hits == {
        "q1": (False, True, None),
        "7": (True, True, None),  # no-result question with an empty ranking: a hit
        "absent": (True, True, None),  # missing from the run = empty ranking
        "absent2": (False, False, None),
    }


def test_built_from_config_with_relative_path(tmp_path: Path) -> None:
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "r.run").write_text("q1 Q0 a 1 3 t\n", encoding="utf-8")
    registry = RetrieverRegistry(
        {"mine": {"type": "run_file", "path": "runs/r.run"}}, base_dir=tmp_path
    )
    retriever = registry.build("mine")
    assert retriever.identifier == "mine"
    assert evaluate(_set(("q1", ["a"])), retriever).top1_hits == 1


def test_trec_run_reads_what_trec_eval_reads(tmp_path: Path) -> None:
    """Fields after the run tag are ignored and a line starting with '#' is a comment, as in
    trec_eval's own test/results.trunc; a '#' inside a document id is part of the id."""
    run = tmp_path / "r.run"
    run.write_text(
        "# a comment\nq1 Q0 a 1 2.0 t more junk at\n#q1 Q0 c 1 9.0 t\nq1 Q0 b#2 2 1.0 t\n",
        encoding="utf-8",
    )
    assert read_run(run) == {"q1": ["a", "b#2"]}


def test_plain_retrieve_explains_it_needs_the_question_id(tmp_path: Path) -> None:
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 a 1 3 t\n", encoding="utf-8")
    with pytest.raises(LookupError, match="retrieve_for"):
        RunFileRetriever.from_file(run).retrieve("q1", 3)


@pytest.mark.parametrize(
    ("name", "content", "message"),
    [
        ("bad.run", "q1 Q0 a 1\n", "line 1: expected 6 columns"),
        ("bad.run", "q1 Q0 a 1 3 t\nq1 Q0 b one 2 t\n", "line 2: rank 'one' must be an integer"),
        ("empty.run", "\n", "holds no rankings"),
        ("bad.jsonl", '{"question_id": "q", "ranking": "a"}\n', "line 1: 'ranking' must be a list"),
        ("bad.jsonl", "{oops\n", "line 1: invalid JSON"),
        ("bad.jsonl", '{"ranking": []}\n', "line 1: expected"),
        (
            "dup.jsonl",
            '{"question_id": "q", "ranking": []}\n{"question_id": "q", "ranking": []}\n',
            r"line 2: question id 'q' already has a ranking \(line 1\)",
        ),
    ],
)
def test_malformed_run_names_file_and_line(
    tmp_path: Path, name: str, content: str, message: str
) -> None:
    (tmp_path / name).write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=message) as info:
        read_run(tmp_path / name)
    assert name in str(info.value)


def test_option_errors_name_the_retriever_option(tmp_path: Path) -> None:
    context = BuildContext(base_dir=tmp_path, source="cfg.yaml")
    with pytest.raises(
        ConfigError, match=r"cfg.yaml: retrievers.r.path: run file .* does not exist"
    ):
        RunFileRetriever.from_options("r", {"path": "nope.run"}, context)
    with pytest.raises(ConfigError, match=r"retrievers.r.format: "):
        RunFileRetriever.from_options("r", {"path": "x", "format": "csv"}, context)
    with pytest.raises(ConfigError, match=r"retrievers.r.colour: unknown option"):
        RunFileRetriever.from_options("r", {"path": "x", "colour": 1}, context)


def test_scifact_bm25s_run_matches_trec_eval_success_figures() -> None:
    scifact = shared_collection("scifact")
    from retrieval_eval.golden.importers import import_beir

    golden = import_beir(scifact, split="test", identifier="scifact")
    result = evaluate(golden, RunFileRetriever.from_file(scifact / "runs" / "bm25s.run"))
    assert result.question_count == 300
    assert result.error_count == 0
    assert round(result.top1_hit_rate or 0, 4) == 0.5500
    assert round(result.top3_hit_rate or 0, 4) == 0.7267


def test_existing_ids_are_ids_seen_anywhere_in_the_run(tmp_path: Path) -> None:
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 a 1 3 t\nq1 Q0 b 2 2 t\nq2 Q0 c 1 1 t\n", encoding="utf-8")
    retriever = RunFileRetriever.from_file(run)
    assert "best effort" in retriever.existing_ids_source
    # c is seen for another question, so it "exists"; d was never returned, so it looks dead
    assert retriever.existing_ids(["a", "c", "d"]) == {"a", "c"}


def test_missing_error_makes_an_absent_question_its_error_not_a_hit(tmp_path: Path) -> None:
    (tmp_path / "r.run").write_text("q1 Q0 a 1 3 t\n", encoding="utf-8")
    registry = RetrieverRegistry(
        {"strict": {"type": "run_file", "path": "r.run", "missing": "error"}}, base_dir=tmp_path
    )
    result = evaluate(_set(("q1", ["a"]), ("absent", [])), registry.build("strict"))
    by_id = {q.id: q for q in result.questions}
    assert by_id["q1"].top1_hit and by_id["q1"].error is None
    absent = by_id["absent"]
    assert (
        not absent.top1_hit and absent.error is not None and "not in the run file" in absent.error
    )


def test_document_texts_only_with_a_corpus(tmp_path: Path) -> None:
    (tmp_path / "r.run").write_text("q1 Q0 a 1 3 t\n", encoding="utf-8")
    beir = tmp_path / "beir"
    beir.mkdir()
    (beir / "corpus.jsonl").write_text(
        json.dumps({"_id": "a", "title": "A", "text": "about a"}) + "\n", encoding="utf-8"
    )
    (beir / "SOURCE.md").write_text("not a document", encoding="utf-8")
    registry = RetrieverRegistry(
        {
            "plain": {"type": "run_file", "path": "r.run"},
            "with_corpus": {"type": "run_file", "path": "r.run", "corpus": "beir"},
            "bad": {"type": "run_file", "path": "r.run", "corpus": "nowhere"},
        },
        base_dir=tmp_path,
    )
    assert not hasattr(registry.build("plain"), "document_texts")
    # a BEIR folder is read as its corpus.jsonl, as lint reads it
    assert registry.build("with_corpus").document_texts(["a", "b"]) == {"a": "A\nabout a"}
    with pytest.raises(ConfigError, match=r"corpus .*nowhere does not exist"):
        registry.build("bad")

from __future__ import annotations

import random
from pathlib import Path

import pytest

from lint.sets import document, golden, question
from retrieval_eval.config.models import LintOptions
from retrieval_eval.lint.completeness import check_completeness
from retrieval_eval.lint.signature_cache import KIND
from retrieval_eval.retrievers.corpus import read_corpus


def _page(seed: int, words: int = 200) -> str:
    rng = random.Random(seed)
    return " ".join(
        rng.choice(
            [
                "alpha",
                "beta",
                "gamma",
                "delta",
                "plan",
                "refund",
                "days",
                "eu",
                "monthly",
                "annual",
                "within",
                "request",
                "support",
                "team",
            ]
        )
        + str(rng.randint(0, 50))
        for _ in range(words)
    )


def test_an_unlabelled_near_copy_of_a_target_is_a_candidate_label() -> None:
    original = _page(1)
    words = original.split()
    copy = " ".join(words[:190] + ["changed"] * 10)  # the last paragraph differs
    docs = [
        document("refunds.md", original),
        document("refunds-eu.md", copy),
        document("other.md", _page(2)),
    ]
    found = check_completeness(
        golden(
            question("one", "Refund window?", "match", "refunds.md"),
            question("both", "Refund window anywhere?", "match", "refunds.md", "refunds-eu.md"),
            question("none", "Anything else?", "gap", "other.md"),
        ),
        docs,
        LintOptions(),
    )
    assert [(f.question_ids, f.doc_ids, f.severity) for f in found] == [
        (["one"], ["refunds-eu.md"], "warning")
    ]
    candidate = found[0].details["candidates"]["refunds-eu.md"]
    assert candidate["similar_to"] == "refunds.md"
    assert 0.8 <= candidate["jaccard"] < 1.0
    assert (
        check_completeness(
            golden(question("one", "Refund window?", "match", "refunds.md")),
            docs,
            LintOptions(document_similarity=0.99),
        )
        == []
    )


def test_targets_missing_from_the_corpus_are_skipped() -> None:
    docs = [document("a.md", _page(3)), document("b.md", _page(3))]
    found = check_completeness(golden(question("q", "x?", "match", "gone.md")), docs, LintOptions())
    assert found == []


def test_signatures_of_a_corpus_path_are_cached_and_give_the_same_findings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "corpus"
    folder.mkdir()
    original = _page(5)
    (folder / "a.md").write_text(original)
    (folder / "b.md").write_text(" ".join(original.split()[:195] + ["edited"] * 5))
    (folder / "c.md").write_text(_page(6))
    docs = read_corpus(folder)
    lint_set = golden(question("q", "x?", "match", "a.md"))
    monkeypatch.setenv("RETRIEVAL_EVAL_CACHE", str(tmp_path / "cache"))
    first = check_completeness(lint_set, docs, LintOptions(), folder)
    entries = list((tmp_path / "cache" / KIND).iterdir())
    assert len(entries) == 1 and (entries[0] / "signatures.npy").is_file()
    again = check_completeness(lint_set, docs, LintOptions(), folder)  # from the cache
    uncached = check_completeness(lint_set, docs, LintOptions())
    assert first == again == uncached
    assert [f.doc_ids for f in first] == [["b.md"]]
    (folder / "c.md").write_text(_page(7))  # an edited corpus is a new entry
    check_completeness(lint_set, read_corpus(folder), LintOptions(), folder)
    assert len(list((tmp_path / "cache" / KIND).iterdir())) == 2

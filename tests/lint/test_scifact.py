"""Lint on real data: SciFact (5,183 abstracts, 300 test claims) with the lexical corpus."""

from __future__ import annotations

import pytest
from helpers import shared_collection

from retrieval_eval.golden.importers import import_beir
from retrieval_eval.lint import LintReport, run_lint
from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> LintReport:
    root = shared_collection("scifact")
    with pytest.MonkeyPatch.context() as patch:  # the index cache under tmp, not the home folder
        patch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path_factory.mktemp("home")))
        retriever = LexicalRetriever("scifact_bm25", LexicalOptions(corpus=root / "corpus.jsonl"))
        return run_lint(import_beir(root), retriever=retriever)


def test_scifact_has_no_dead_labels_and_every_text_check_completes(report: LintReport) -> None:
    assert report.questions == 300
    assert {"dead_labels", "form_honesty", "label_completeness", "duplicate_questions"} <= set(
        report.checks_run
    )
    assert not [f for f in report.findings if f.check == "dead_labels"]
    assert not report.has_errors


def test_scifact_negated_claims_are_near_duplicates(report: LintReport) -> None:
    # SciFact pairs claims with their negations ("increases" / "decreases"): different
    # questions, worded almost alike, which the near-duplicate check is there to show
    pairs = [f.question_ids for f in report.findings if f.check == "duplicate_questions"]
    assert ["532", "533"] in pairs  # Hyperfibrinogenemia decreases / increases ...
    assert all(
        f.details["similarity"] >= 0.8 for f in report.findings if f.check == "duplicate_questions"
    )


def test_scifact_power_at_a_ten_point_threshold(report: LintReport) -> None:
    assert report.power is not None
    overall = {f.metric: f for f in report.power.figures if f.scope == "overall"}
    assert overall["top1"].questions == 300
    drop = overall["top1"].detectable_drop
    assert drop is not None and drop < 0.10  # 300 claims can see a 10-point drop
    assert not [f for f in report.findings if f.check == "power" and f.severity == "warning"]

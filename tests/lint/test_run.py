"""run_lint end to end on small sets, with a real SQLite store opened read-only."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lint.sets import document, golden, question
from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.lint import run_lint
from retrieval_eval.lint.power import questions_needed
from retrieval_eval.lint.render import RENDERERS
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.store import open_store, open_store_to_read
from retrieval_eval.workflows.lint import stored_for_lint

SET = golden(
    question("found", "How long do refunds take?", "match", "refunds.md"),
    question("lost", "Where is the SAML setting?", "match", "sso.md"),
    question("gone", "What did the old page say?", "match", "old.md"),
)
DOCS = [document("refunds.md", "Refunds take 30 days."), document("sso.md", "SAML setup.")]


class Index:
    """A retriever over DOCS that can look its ids up (the dead-labels capability)."""

    identifier = "index"

    def retrieve(self, question: str, limit: int) -> Sequence[str]:
        return ["refunds.md"][:limit]

    def existing_ids(self, ids: Sequence[str]) -> set[str]:
        return {d for d in ids if d in {"refunds.md", "sso.md"}}


def test_every_check_runs_when_every_input_is_given(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(url) as store:
        for answer in (["refunds.md"], ["refunds.md", "x.md"]):
            retriever = FunctionRetriever(
                lambda q, k, a=answer: a[:k], identifier=f"r{len(answer)}"
            )
            store.runs.save(evaluate(SET, retriever, RunSettings()))
    with open_store_to_read(url) as reader:
        report = run_lint(SET, retriever=Index(), corpus=DOCS, stored=stored_for_lint(reader, SET))
    assert report.checks_skipped == {}
    assert set(report.checks_run) >= {"dead_labels", "form_honesty", "never_found", "power"}
    dead = [f for f in report.findings if f.check == "dead_labels"]
    assert [(f.severity, f.question_ids, f.doc_ids) for f in dead] == [
        ("error", ["gone"], ["old.md"])
    ]
    assert report.has_errors
    never = {f.question_ids[0]: f for f in report.findings if f.check == "never_found"}
    assert set(never) == {"lost", "gone"}
    assert never["lost"].details["returned"] == {"r1": ["refunds.md"], "r2": ["refunds.md", "x.md"]}
    assert report.power is not None and report.power.rates_from.startswith("stored run")
    overall = [f for f in report.power.figures if f.scope == "overall"]
    assert [f.rate for f in overall] == pytest.approx([1 / 3, 1 / 3])
    for render in RENDERERS.values():  # every format names the findings and the power figure
        text = render(report)
        assert "old.md" in text and "detectable" in text.lower()


def test_checks_without_their_input_are_skipped_with_a_reason() -> None:
    report = run_lint(SET)
    assert set(report.checks_skipped) == {
        "dead_labels",
        "form_honesty",
        "label_completeness",
        "never_found",
    }
    assert "--corpus" in report.checks_skipped["form_honesty"]
    assert report.checks_run == ["duplicate_questions", "power"]
    assert not report.has_errors


def test_a_retriever_that_cannot_look_ids_up_skips_dead_labels() -> None:
    report = run_lint(SET, retriever=FunctionRetriever(lambda q, k: [], identifier="plain"))
    assert "plain" in report.checks_skipped["dead_labels"]


def test_a_threshold_below_the_detectable_drop_warns_with_the_set_size_needed() -> None:
    big = golden(
        *(question(f"q{i}", f"question number {i}?", "match", f"d{i}.md") for i in range(300))
    )
    report = run_lint(big, thresholds=Thresholds(max_top1_drop=0.05, max_top3_drop=0.10))
    warnings = [f for f in report.findings if f.check == "power" and f.severity == "warning"]
    assert len(warnings) == 1  # 300 questions see ~6.6 points: 10 is fine, 5 is not
    assert "max_top1_drop 5 points" in warnings[0].message
    assert f"; {questions_needed(0.05)} questions to see 5 points" in warnings[0].message
    assert "at 300 questions a drop needs ≥ 6.6 points to be seen" in warnings[0].message
    assert warnings[0].details["questions_needed"] == questions_needed(0.05) > 300


def test_a_corpus_with_fewer_than_half_the_targets_is_refused_not_linted() -> None:
    from retrieval_eval.lint.run import CorpusMismatchError

    # one of three targets: under half, so both text checks would pass vacuously
    with pytest.raises(CorpusMismatchError, match="1 of the 3 target ids of"):
        run_lint(SET, corpus=[DOCS[0], document("x.md", "Other.")])
    report = run_lint(SET, corpus=DOCS)  # two of three: linted, the missing one is dead labels'
    assert "form_honesty" in report.checks_run

"""A linted labelled run (the DAG's ``lint: warn``) asks the retriever's ``existing_ids`` once
(issue 14): the dead-label check its plan makes is handed to ``run_lint``, which would otherwise
ask again, and to the run, whose batches then do not ask."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import yaml
from dag_helpers import EXAMPLES

from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever
from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

GONE = "billing/refunds.md"  # dropped from the index by the counting retriever


class CountingIndex:
    """The demo BM25 without GONE, counting ``existing_ids`` calls (class-wide: the task builds
    its own instance from the import path)."""

    calls: ClassVar[list[list[str]]] = []

    def __init__(self) -> None:
        self._bm25 = LexicalRetriever("bm25", LexicalOptions(corpus=EXAMPLES / "corpus"))

    def retrieve(self, question: str, limit: int) -> list[str]:
        return [d for d in self._bm25.retrieve(question, limit + 1) if d != GONE][:limit]

    def existing_ids(self, ids: list[str]) -> set[str]:
        CountingIndex.calls.append(list(ids))
        return self._bm25.existing_ids(ids) - {GONE}


def _config(tmp_path: Path) -> str:
    path = tmp_path / "config.yaml"
    data = {"sets": [str(EXAMPLES / "golden" / "handbook.yaml")], "lint": "warn"}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return str(path)


def test_a_linted_run_asks_existing_ids_once_and_still_reports_dead_labels(
    tmp_path: Path,
) -> None:
    CountingIndex.calls.clear()
    job = LabelledRunJob(
        config_path=_config(tmp_path),
        set="handbook.demo",
        retriever=f"{__name__}:CountingIndex",
        lint="warn",
        max_batches=3,
    )
    workflow = LabelledRun(job)
    batches = workflow.plan(max_batches=3)
    outcome = batches[0].lint
    assert outcome is not None and len(CountingIndex.calls) == 1
    record = workflow.record(workflow.reduce([workflow.execute(batch) for batch in batches]))
    assert len(CountingIndex.calls) == 1  # three batches, and the run, asked no more
    assert record.result.dead_labels is not None
    assert record.result.dead_labels.dead_ids == [GONE]
    assert record.verdict.dead_ids == [GONE]
    assert GONE in CountingIndex.calls[0]
    assert outcome["dead_labels"]["dead_ids"] == [GONE]
    # run_lint's dead-label findings come from that one answer: the same dead id, as errors
    dead = [f for f in outcome["findings"] if f["check"] == "dead_labels"]
    assert dead and all(f["severity"] == "error" and f["doc_ids"] == [GONE] for f in dead)
    labels = outcome["dead_labels"]
    assert len(dead) == len(labels["stale_questions"]) + len(labels["partly_dead"])


def test_run_lint_given_the_check_does_not_ask_again() -> None:
    from retrieval_eval.evaluation.labels import find_dead_labels
    from retrieval_eval.golden.loaders import load_golden_set
    from retrieval_eval.lint import run_lint

    golden = load_golden_set(EXAMPLES / "golden" / "handbook.yaml")
    retriever = CountingIndex()
    CountingIndex.calls.clear()
    labels = find_dead_labels(golden, retriever)
    given = run_lint(golden, retriever=retriever, dead_labels=labels)
    assert len(CountingIndex.calls) == 1
    asked = run_lint(golden, retriever=retriever)  # without it, run_lint asks for itself
    assert len(CountingIndex.calls) == 2
    assert [f.doc_ids for f in given.findings if f.check == "dead_labels"] == [
        f.doc_ids for f in asked.findings if f.check == "dead_labels"
    ]

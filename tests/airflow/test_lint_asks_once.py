"""The DAG's lint task asks the retriever's ``existing_ids`` once (issue 14): the dead-label
check it makes for the run is handed to ``run_lint``, which would otherwise ask again."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import yaml
from dag_helpers import EXAMPLES

from retrieval_eval.airflow import steps
from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever

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


def test_the_lint_task_asks_existing_ids_once_and_still_reports_dead_labels(
    tmp_path: Path,
) -> None:
    CountingIndex.calls.clear()
    outcome = steps.lint_set(
        _config(tmp_path), "handbook.demo", f"{__name__}:CountingIndex", "warn"
    )
    assert len(CountingIndex.calls) == 1
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

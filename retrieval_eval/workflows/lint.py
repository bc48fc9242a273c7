"""What lint reads of a store, read here and handed to :func:`retrieval_eval.lint.run_lint`
(``stored=``): the domain's checks read no store. ``sets lint --db`` opens the store read-only."""

from __future__ import annotations

from typing import Any

from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.never_found import RUNS_PER_RETRIEVER, StoredRuns


def matching_runs(store: Any, golden_set: GoldenQuestionSet) -> list[Any]:
    """The stored valid runs judged against these labels, newest first per retriever."""
    runs = []
    for retriever in store.runs.retrievers_for(golden_set.identifier):
        for run in store.runs.history(golden_set.identifier, retriever, limit=RUNS_PER_RETRIEVER):
            if run.status == "valid" and run.result.labels_fingerprint == golden_set.fingerprint:
                runs.append(run)
    return runs


def stored_for_lint(store: Any, golden_set: GoldenQuestionSet) -> StoredRuns:
    """The set's matching runs (:func:`matching_runs`) and its stored judgments, from ``store``
    (a :class:`~retrieval_eval.store.Store`, read-only is enough)."""
    return StoredRuns(
        runs=matching_runs(store, golden_set),
        judgments=store.judgments.read(golden_set.identifier),
    )

"""Never found: questions no stored run of any retriever has hit at top-3.

Runs count when they are of this set, with the same labels fingerprint (the labels they were
judged against are these), and valid. The newest ``RUNS_PER_RETRIEVER`` runs of every retriever
with runs on the set are read through a :class:`~retrieval_eval.store.Store` opened read-only.
The check never writes or creates a store.

Each finding names, per retriever, what its newest such run returned at top 3 instead, for a
person to judge: a label to add, a question to reword, or a retriever that truly cannot find it.
A question no counted run asked (added after them) is not reported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.models import Finding

if TYPE_CHECKING:
    from retrieval_eval.store.models import StoredRun

CHECK = "never_found"
RUNS_PER_RETRIEVER = 20


def matching_runs(store: Any, golden_set: GoldenQuestionSet) -> list[StoredRun]:
    """The stored valid runs judged against these labels, newest first per retriever."""
    runs = []
    for retriever in store.retrievers_for(golden_set.identifier):
        for run in store.history(golden_set.identifier, retriever, limit=RUNS_PER_RETRIEVER):
            if run.status == "valid" and run.result.labels_fingerprint == golden_set.fingerprint:
                runs.append(run)
    return runs


def check_never_found(golden_set: GoldenQuestionSet, runs: list[StoredRun]) -> list[Finding]:
    hit: set[str] = set()
    asked: set[str] = set()
    instead: dict[str, dict[str, list[str]]] = {}
    for run in runs:  # newest first per retriever: the first answer seen is the newest
        for answered in run.result.questions:
            asked.add(answered.id)
            if answered.top3_hit:
                hit.add(answered.id)
            instead.setdefault(answered.id, {}).setdefault(
                run.result.retriever, list(answered.retrieved[:3])
            )
    findings = []
    retrievers = sorted({run.result.retriever for run in runs})
    for question in golden_set.questions:
        if question.id not in asked or question.id in hit:
            continue
        returned = instead.get(question.id, {})
        findings.append(
            Finding(
                check=CHECK,
                severity="warning",
                question_ids=[question.id],
                doc_ids=list(question.targets()),
                message=f"no stored run hit it at top 3 ({len(runs)} runs of "
                f"{', '.join(retrievers)}); returned instead: "
                + "; ".join(f"{r}: {', '.join(ids) or 'nothing'}" for r, ids in returned.items()),
                details={"returned": returned, "runs": len(runs)},
            )
        )
    return findings

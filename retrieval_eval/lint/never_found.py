"""Never found: questions no stored run of any retriever has hit at top-3.

Runs count when they are of this set, with the same labels fingerprint (the labels they were
judged against are these), and valid. The newest ``RUNS_PER_RETRIEVER`` runs of every retriever
with runs on the set are read by the caller (:func:`retrieval_eval.workflows.lint.stored_for_lint`,
from a store opened read-only) and handed in as :class:`StoredRuns`: the check reads no store.

Each finding names, per retriever, what its newest such run returned at top 3 instead, for a
person to judge: a label to add, a question to reword, or a retriever that truly cannot find it.
A question no counted run asked (added after them) is not reported.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.models import Finding

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.labels.judgments import Judgment

CHECK = "never_found"
RUNS_PER_RETRIEVER = 20


class StoredRun(Protocol):
    """What lint reads of a stored run (:class:`retrieval_eval.store.StoredRun` is one)."""

    @property
    def id(self) -> int: ...

    @property
    def run_date(self) -> datetime: ...

    @property
    def status(self) -> str: ...

    @property
    def result(self) -> RunResult: ...


@dataclass(frozen=True)
class StoredRuns:
    """What a store holds of a set for lint: its valid runs judged against these labels (newest
    first per retriever, at most ``RUNS_PER_RETRIEVER`` each) and its stored judgments."""

    runs: Sequence[StoredRun] = ()
    judgments: Sequence[Judgment] = field(default_factory=list)


def check_never_found(golden_set: GoldenQuestionSet, runs: Sequence[StoredRun]) -> list[Finding]:
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

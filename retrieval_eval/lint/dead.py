"""Dead labels in lint: :func:`retrieval_eval.evaluation.labels.find_dead_labels`, as error findings.

One error per stale question (every target gone: no retriever can answer it) and one per
partly dead question (a target gone, others left); the dead ids are in ``doc_ids``. A retriever
without ``existing_ids`` makes the check skipped, with the reason, not clean; so does a lookup
that fails (an HTTP ``lookup`` endpoint down): skipped with the redacted error, never a crash, and
the exit code is then the other findings'.

A caller that already asked the retriever (the DAG's lint task checks dead labels for the run
itself) passes that answer as ``found``: the retriever is then not asked again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.models import Finding

if TYPE_CHECKING:
    from retrieval_eval.evaluation.labels import DeadLabels

CHECK = "dead_labels"


def check_dead_labels(
    golden_set: GoldenQuestionSet, retriever: Any, found: DeadLabels | None = None
) -> list[Finding] | str:
    """The findings, or the reason the retriever cannot be checked (``found``: see above)."""
    from retrieval_eval.evaluation.labels import dead_labels_or_failure

    dead = found if found is not None else dead_labels_or_failure(golden_set, retriever)
    if not dead.checked:
        return f"retriever {getattr(retriever, 'identifier', '?')!r}: {dead.source}"
    by_id = {q.id: q for q in golden_set.questions}
    dead_ids = set(dead.dead_ids)
    findings = []
    for question_id in dead.stale_questions:
        gone = sorted(d for d in by_id[question_id].targets() if d in dead_ids)
        findings.append(
            Finding(
                check=CHECK,
                severity="error",
                question_ids=[question_id],
                doc_ids=gone,
                message=f"stale label: no target is in the index any more ({', '.join(gone)}; "
                f"{dead.source})",
                details={"stale": True, "source": dead.source},
            )
        )
    for question_id, gone in dead.partly_dead.items():
        findings.append(
            Finding(
                check=CHECK,
                severity="error",
                question_ids=[question_id],
                doc_ids=list(gone),
                message=f"partly dead: {', '.join(gone)} not in the index any more ({dead.source})",
                details={"stale": False, "source": dead.source},
            )
        )
    return findings

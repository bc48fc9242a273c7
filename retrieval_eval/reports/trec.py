"""A run out to a TREC run file, to cross-check with trec_eval, ranx or ir_measures:
:func:`run_lines` gives ``qid Q0 docid rank score tag`` from a :class:`RunResult`. A stored result
keeps only the distinct documents to its deepest cutoff (3 by default), so only metrics to that
depth (success@1, success@3) are comparable. Questions whose retrieval failed have no lines.
Scores descend with rank (n, n-1, ..., 1), so tools that sort by score keep our order.
Ids with whitespace cannot be written: an error names the question.
"""

from __future__ import annotations

import re

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.golden.exporters import check_token


def run_lines(result: RunResult, tag: str | None = None) -> list[str]:
    tag = re.sub(r"\s+", "_", tag or result.retriever) or "retrieval-eval"
    lines = []
    for question in result.questions:
        if question.error is not None:
            continue
        check_token(question.id, "question id", question.id)
        count = len(question.retrieved)
        for rank, doc_id in enumerate(question.retrieved, start=1):
            check_token(question.id, "document id", doc_id)
            lines.append(f"{question.id} Q0 {doc_id} {rank} {count - rank + 1} {tag}")
    return lines

"""The JSON contract document of a run (``--format json``)."""

from __future__ import annotations

from typing import Any

from retrieval_eval.evaluation.results import RunResult, paused_gc
from retrieval_eval.reports.json_text import indented_json, marked_halves
from retrieval_eval.reports.question_json import questions_json


@paused_gc()  # bulk, acyclic allocation only: no user code runs in here
def render_json(result: RunResult, extra: dict[str, Any] | None = None) -> str:
    """``json.dumps({**result.contract(), **extra}, indent=2, ensure_ascii=False)``: the
    questions written straight from the results when their values are plain
    (:mod:`retrieval_eval.reports.question_json`), else from the contract's records."""
    extra = extra or {}
    if "questions" not in extra:  # else extra's questions are the report's
        halves = marked_halves({**result.contract_head(), "questions": None, **extra})
        if halves is not None:
            around = (halves[0], halves[1] + "\n")
            text = questions_json(result.questions, result.stale_targets(), around)
            if text is not None:
                return text
    return indented_json({**result.contract(), **extra}) + "\n"

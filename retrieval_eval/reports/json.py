"""The JSON contract document of a run (``--format json``): ``{**result.contract(), **extra}``,
indented, written by :mod:`retrieval_eval.formats.jsonio` (NaN and infinities as ``null``)."""

from __future__ import annotations

from typing import Any

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.formats.jsonio import dumps


def render_json(result: RunResult, extra: dict[str, Any] | None = None) -> str:
    """The run's contract with ``extra``'s keys (run id, verdict, power...) after its own; a
    ``questions`` key in ``extra`` replaces the run's questions."""
    return dumps({**result.contract(), **(extra or {})}) + "\n"

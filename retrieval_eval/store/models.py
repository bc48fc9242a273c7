"""A run as the store gives it back."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.verdicts.models import Verdict, VerdictState


class StoredRun(BaseModel):
    """One ``eval_result`` row with its questions and slices.

    ``result`` is the :class:`RunResult` rebuilt from the rows; ``verdict`` is the one computed
    when the run was saved (None when it was saved without one). ``accepted_baseline`` marks a
    regressed run a person accepted as the new normal (``retrieval-eval runs accept``).
    """

    model_config = ConfigDict(defer_build=True)  # schema built at first use, not at import

    id: int
    grader: str
    status: Literal["valid", "invalid"]
    verdict_state: VerdictState | None = None
    is_regression: bool = False
    accepted_baseline: bool = False
    run_date: datetime
    created_at: datetime
    baseline_run_id: int | None = None
    verdict: Verdict | None = None
    result: RunResult
    # the forms and hard classes of its questions in the set's order, as saved with it (None:
    # saved without them; store/questions.py reads them from the question rows)
    forms: list[str] | None = None
    hard_classes: list[str] | None = None

"""What lint reports: findings with a severity, the checks run and skipped, the power figures."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")


class _Report(BaseModel):
    """The base of lint's models: each one's schema built at first use, not at import (a
    command that lints nothing never builds them)."""

    model_config = ConfigDict(defer_build=True)


class Finding(_Report):
    """One thing a person should look at; ``details`` holds the figures behind the message."""

    check: str
    severity: Severity
    question_ids: list[str] = Field(default_factory=list)
    doc_ids: list[str] = Field(default_factory=list)
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


class PowerFigure(_Report):
    """The smallest drop of one metric a set (or slice) of ``questions`` detects.

    ``detectable_drop`` is None when no drop up to the whole rate is detectable.
    ``questions_needed`` is the set size at which the threshold itself becomes detectable.
    """

    metric: str  # the depth: "top1", "top3", "top5", ...
    scope: str = "overall"  # "overall", or "form=gap", "hard_class=near-duplicate"
    questions: int
    rate: float | None = None
    threshold: float
    detectable_drop: float | None
    questions_needed: int | None

    @property
    def threshold_too_small(self) -> bool:
        return self.detectable_drop is None or self.threshold < self.detectable_drop - 1e-9


class PowerReport(_Report):
    """Power of the set at ``alpha`` (two-sided) with ``power``; method in :mod:`.power`."""

    alpha: float
    power: float
    churn: float
    rates_from: str  # where the rates came from ("run 12 (handbook_bm25)", "no stored run")
    figures: list[PowerFigure] = Field(default_factory=list)
    # the churn measured at each depth over stored runs (empty: ``churn`` assumed at every one)
    churn_at: dict[int, float] = Field(default_factory=dict)
    churn_from: str = "assumed (lint.churn)"


class LintReport(_Report):
    set_id: str
    questions: int
    findings: list[Finding] = Field(default_factory=list)
    checks_run: list[str] = Field(default_factory=list)
    checks_skipped: dict[str, str] = Field(default_factory=dict)
    power: PowerReport | None = None

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.severity == severity)

    @property
    def has_errors(self) -> bool:
        return self.count("error") > 0

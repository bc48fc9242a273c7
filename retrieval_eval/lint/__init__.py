"""``retrieval-eval sets lint``: is a golden set healthy enough to trust its hit rates?

One module per check: :mod:`.dead` (dead labels), :mod:`.forms` (form honesty),
:mod:`.duplicates` (duplicate questions, identical targets), :mod:`.completeness` (candidate
labels), :mod:`.never_found`, :mod:`.power` (the smallest detectable drop). :mod:`.run` runs
those the inputs allow; :mod:`.render` writes the report. Thresholds: ``lint:`` in the config
(:class:`~retrieval_eval.config.LintOptions`).
"""

from __future__ import annotations

from retrieval_eval.config import LintOptions
from retrieval_eval.lint.models import Finding, LintReport, PowerFigure, PowerReport
from retrieval_eval.lint.run import run_lint

__all__ = ["Finding", "LintOptions", "LintReport", "PowerFigure", "PowerReport", "run_lint"]

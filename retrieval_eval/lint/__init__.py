"""``retrieval-eval sets lint``: is a golden set healthy enough to trust its hit rates?

One module per check: :mod:`.dead` (dead labels), :mod:`.forms` (form honesty),
:mod:`.duplicates` (duplicate questions, identical targets), :mod:`.completeness` (candidate
labels), :mod:`.never_found`, :mod:`.power` (the smallest detectable drop). :mod:`.run` runs
those the inputs allow; :mod:`.render` writes the report. Thresholds: ``lint:`` in the config
(:class:`~retrieval_eval.config.models.LintOptions`).

The names below are imported when first used: the run report imports :mod:`.power` alone, without
the checks (numpy, the corpus reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from retrieval_eval import lazy_exports

if TYPE_CHECKING:
    from retrieval_eval.config.models import LintOptions
    from retrieval_eval.lint.models import Finding, LintReport, PowerFigure, PowerReport
    from retrieval_eval.lint.run import run_lint

_EXPORTS = {
    "LintOptions": "retrieval_eval.config.models",
    "Finding": "retrieval_eval.lint.models",
    "LintReport": "retrieval_eval.lint.models",
    "PowerFigure": "retrieval_eval.lint.models",
    "PowerReport": "retrieval_eval.lint.models",
    "run_lint": "retrieval_eval.lint.run",
}

__all__ = ["Finding", "LintOptions", "LintReport", "PowerFigure", "PowerReport", "run_lint"]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

"""The run page's power line: the smallest drop the run's set size detects, by the thresholds.

The thresholds are those the config gives the run's (set, retriever) pair (the config found as
everywhere else: ``$RETRIEVAL_EVAL_CONFIG``, then ``./retrieval_eval.yaml``), else the defaults
when there is no config or it cannot be read: the page still shows the figure, computed
with :func:`retrieval_eval.lint.power.run_power` on the run's own question count and rates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_eval.store import StoredRun


def power_of(stored: StoredRun) -> tuple[dict[str, Any], str]:
    """The power report as JSON data, and its one-line summary."""
    from retrieval_eval.config.models import Config, load_config
    from retrieval_eval.errors import RetrievalEvalError
    from retrieval_eval.lint.power import run_power
    from retrieval_eval.lint.render import power_summary

    try:
        config = load_config()
    except RetrievalEvalError:  # the page is about the run, not the config
        config = Config()
    result = stored.result
    thresholds = config.section_for(result.set_identifier, result.retriever, "thresholds")
    power = run_power(result, thresholds, config.lint)
    return power.model_dump(mode="json"), power_summary(power)

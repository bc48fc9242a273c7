"""``retrieval_gate``: stop what follows an evaluation (the index promotion) when it regressed.

Given the verdict :func:`retrieval_eval.airflow.group.evaluate_retrieval` returns (or any
:class:`retrieval_eval.airflow.outcome.Outcome` JSON), a ``regression`` or an ``invalid_run``
either skips every task downstream of the gate (``on_regression="skip"``, the default: a
short-circuit; the DAG run ends green, the promotion skipped) or fails the gate
(``on_regression="fail"``: the downstream tasks end ``upstream_failed`` and the DAG run red).
Any other verdict lets them run. The gate's log line says which, with the figures and the run page.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

ON_REGRESSION = ("skip", "fail")


def retrieval_gate(
    verdict: Any, *, on_regression: str = "skip", task_id: str = "retrieval_gate"
) -> Any:
    """Add the gate on ``verdict`` (an XComArg of an outcome) to the DAG being defined; put the
    tasks it guards downstream of what this returns."""
    if on_regression not in ON_REGRESSION:
        raise ValueError(
            f"retrieval_gate(on_regression={on_regression!r}): give 'skip' (skip the downstream "
            "tasks) or 'fail' (fail the gate, and the DAG run)"
        )
    return _gate.override(task_id=task_id)(verdict=verdict, on_regression=on_regression)


@task.short_circuit(ignore_downstream_trigger_rules=True)
def _gate(verdict: dict[str, Any], on_regression: str) -> bool:
    """True (go on) unless the verdict blocks; then False (skip) or a failure, no retries."""
    from retrieval_eval.airflow.outcome import Outcome

    outcome = Outcome.model_validate(verdict)
    line = gate_line(outcome)
    if outcome.passed:
        print(f"{line}: passed, the downstream tasks run")
        return True
    if on_regression == "fail":
        raise AirflowFailException(f"{line}: the gate fails (on_regression='fail')")
    ti = get_current_context()["ti"]
    print(f"{line}: the tasks after {ti.task_id} are skipped")
    return False


def gate_line(outcome: Any) -> str:
    """``retrieval gate: regression of handbook.demo × candidate (index v2): top-1 68.8% →
    12.5%, ...; run 12: URL``: what the gate read, in one line."""
    from retrieval_eval.formats.numbers import pct

    rates = ", ".join(
        f"top-{depth} {pct(outcome.baseline_hit_rates[depth])} → {pct(rate)}"
        if depth in outcome.baseline_hit_rates
        else f"top-{depth} {pct(rate)}"
        for depth, rate in outcome.hit_rates.items()
    )
    index = f" (index {outcome.index_version})" if outcome.index_version else ""
    where = "run not saved" if outcome.run_id is None else f"run {outcome.run_id}"
    if outcome.run_page:
        where += f": {outcome.run_page}"
    state = outcome.state.replace("_", " ")
    return (
        f"retrieval gate: {state} of {outcome.set} × {outcome.retriever}{index}: {rates}; {where}"
    )

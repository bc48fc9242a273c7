"""Which branch tasks run after a record task: after a labelled run's, the verdict's, plus the
labels alert when the verdict names dead ids, plus the approval request (``approve_baseline``);
after a replay's, the drift state's (:func:`drift_branch`)."""

from __future__ import annotations

from typing import Any

BRANCH_REGRESSION = "alert_regression"
BRANCH_INVALID = "alert_invalid_run"
BRANCH_OK = "no_regression"
BRANCH_BASELINE = "baseline"
BRANCH_LABELS = "alert_labels"
BRANCH_APPROVE = "request_approval"  # approve_baseline: the approval DAG asks (approval.py)
BRANCH_DRIFT = "alert_drift"
BRANCH_INVALID_REPLAY = "alert_invalid_replay"
BRANCH_NO_DRIFT = "no_drift"


def choose_branch(recorded: dict[str, Any]) -> str:
    state = recorded["verdict"]["state"]
    if state == "invalid_run":
        return BRANCH_INVALID
    if state == "regression":
        return BRANCH_REGRESSION
    if state == "baseline":
        return BRANCH_BASELINE
    return BRANCH_OK


def choose_branches(recorded: dict[str, Any], approve_baseline: bool = False) -> list[str]:
    """The verdict's branch, plus :data:`BRANCH_LABELS` when the verdict names dead ids: labels
    that need attention alert on their own branch, never as (or instead of) a regression; plus,
    with ``approve_baseline``, :data:`BRANCH_APPROVE` for a saved run a person may accept as the
    baseline (a regression, or a run under changed labels)."""
    branches = [choose_branch(recorded)]
    if recorded["verdict"].get("dead_ids"):
        branches.append(BRANCH_LABELS)
    if approve_baseline and recorded.get("run_id") is not None and _approvable(recorded):
        branches.append(BRANCH_APPROVE)
    return branches


def _approvable(recorded: dict[str, Any]) -> bool:
    verdict = recorded["verdict"]
    return bool(verdict.get("needs_approval")) or verdict["state"] == "regression"


def drift_branch(state: str) -> str:
    """The branch a replay's drift state takes: nothing compared (``empty``) is never "no
    drift"."""
    if state in ("invalid", "empty"):
        return BRANCH_INVALID_REPLAY
    if state == "drift":
        return BRANCH_DRIFT
    return BRANCH_NO_DRIFT

"""The approval of an evaluation with ``approve_baseline``: a DAG of its own, so the
evaluation's DAG run ends (failed, with ``fail_on_regression``) at once, while a person decides.

The evaluation's ``request_approval`` task emits an event on the pair's approval asset
(:func:`approval_asset_uri`) naming the saved run; the approval DAG, scheduled on that asset,
asks with Airflow's human-in-the-loop :class:`ApprovalOperator` (Airflow 3.1+, standard
provider) whether that run becomes the baseline. The request's text is written at run time from
the stored run (:func:`retrieval_eval.airflow.steps.approval_request`); Approve runs the
``accept_baseline`` task after it, Reject skips it, and no answer within the timeout is Reject
(the operator's default), so the baseline stays.

Only the factory imports this module, and only for such an evaluation, so the other DAGs parse
without the provider's operators.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator


def approval_asset_uri(dag_id: str) -> str:
    """The asset the evaluation DAG ``dag_id`` updates when one of its runs asks for approval."""
    return f"retrieval-eval://approval/{dag_id}"


def approval_dag_id_for(dag_id: str) -> str:
    """``retrieval_eval_approval__<set>__<retriever>`` for the evaluation DAG ``dag_id``."""
    return dag_id.replace("retrieval_eval__", "retrieval_eval_approval__", 1)


class BaselineApproval(ApprovalOperator):
    """Asks in Browse → Required Actions (or the REST API's ``hitlDetails``) whether the saved
    run the triggering asset event names becomes the baseline; the subject and body name the
    run, its figures and its page."""

    def __init__(self, *, job: dict[str, Any], timeout_s: float, **kwargs: Any) -> None:
        super().__init__(
            task_id="approve_baseline",
            subject="Accept the run as the baseline?",  # replaced at run time
            defaults=ApprovalOperator.REJECT,
            response_timeout=timedelta(seconds=timeout_s),
            **kwargs,
        )
        self.job = job
        self.timeout_s = timeout_s

    def execute(self, context: Any) -> Any:
        from retrieval_eval.airflow import steps
        from retrieval_eval.airflow.tasks import store_url

        url = store_url(self.job)
        run_id = steps.approval_run_id(context.get("triggering_asset_events"))
        recorded, result = steps.stored_for_approval(url, run_id)
        self.subject, self.body = steps.approval_request(
            recorded, result, self.job.get("ui_base_url"), url, self.timeout_s
        )
        print(self.subject)
        return super().execute(context)

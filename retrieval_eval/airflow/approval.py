"""The approval step of an evaluation with ``approve_baseline``: Airflow's human-in-the-loop
:class:`ApprovalOperator` (Airflow 3.1+, standard provider), asking whether the run just saved
becomes the baseline.

Only the factory imports this module, and only for such an evaluation, so the other DAGs parse
without the provider's operators. The request's text is written at run time from what
``persist`` recorded (:func:`retrieval_eval.airflow.steps.approval_request`); Approve runs the
``accept_baseline`` task after it, Reject skips it, and no answer within the timeout is Reject
(the operator's default), so the baseline stays.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator


class BaselineApproval(ApprovalOperator):
    """Asks in Browse → Required Actions (or the REST API's ``hitlDetails``) whether the saved
    run becomes the baseline; the subject and body name the run, its figures and its page."""

    def __init__(self, *, job: dict[str, Any], timeout_s: float, **kwargs: Any) -> None:
        super().__init__(
            task_id="approve_baseline",  # steps.BRANCH_APPROVE (steps is imported at run time)
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

        ti = context["ti"]
        recorded = ti.xcom_pull(task_ids="persist")
        result = ti.xcom_pull(task_ids="score")
        self.subject, self.body = steps.approval_request(
            recorded, result, self.job.get("ui_base_url"), store_url(self.job), self.timeout_s
        )
        print(self.subject)
        return super().execute(context)

"""Answers a human-in-the-loop request as a person would through Airflow's REST API, for the
``dag.test()`` runs that park an approval in AWAITING_INPUT (they wait for an answer recorded
from outside). Runs in its own process under the test's Airflow home, sharing its metadata DB.

``python hitl_responder.py DAG_ID OPTION [SECONDS]``: polls the DAG's task instances awaiting
input and answers each with OPTION (``Approve`` or ``Reject``) the way the API's route does
(the response recorded, the task resumed), until SECONDS pass; prints one line per answer.
"""

from __future__ import annotations

import sys
import time


def answer_pending(dag_id: str, option: str) -> list[str]:
    from airflow.models.hitl import HITLDetail
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.trigger import handle_event_submit
    from airflow.triggers.base import TriggerEvent
    from airflow.utils import timezone
    from airflow.utils.session import create_session
    from airflow.utils.state import TaskInstanceState
    from sqlalchemy import select

    answered = []
    with create_session() as session:
        waiting = session.scalars(
            select(TaskInstance).where(
                TaskInstance.dag_id == dag_id,
                TaskInstance.state.in_(
                    [TaskInstanceState.AWAITING_INPUT, TaskInstanceState.DEFERRED]
                ),
            )
        ).all()
        for ti in waiting:
            detail = session.scalar(select(HITLDetail).where(HITLDetail.ti_id == ti.id))
            if detail is None or detail.responded_at is not None:
                continue
            detail.responded_by = {"id": "tester", "name": "tester"}
            detail.responded_at = timezone.utcnow()
            detail.chosen_options = [option]
            detail.params_input = {}
            session.add(detail)
            handle_event_submit(
                TriggerEvent(detail.as_resume_event_payload()), task_instance=ti, session=session
            )
            answered.append(f"{ti.task_id}: {option}")
    return answered


def main() -> None:
    dag_id, option = sys.argv[1], sys.argv[2]
    until = time.monotonic() + float(sys.argv[3] if len(sys.argv) > 3 else 600)
    while time.monotonic() < until:
        for line in answer_pending(dag_id, option):
            print(line, flush=True)
        time.sleep(0.5)


if __name__ == "__main__":
    main()

"""The one adapter from a workflow to Airflow tasks: plan → execute (mapped) → reduce → record.

Any workflow registered in :data:`retrieval_eval.workflows.base.WORKFLOWS` becomes four tasks
with :func:`workflow_tasks`: the plan task returns the batches, ``execute`` is mapped over them
(``.expand(batch=...)``), reduce joins the parts, record stores what was reduced and returns the
outcome. Each task rebuilds the workflow from the same small job (JSON, rendered as templates)
and its DAG run (:func:`retrieval_eval.airflow.runtime.bind`); batches, parts, the reduced value
and the outcome travel as XCom JSON, each the ``model_dump`` of the workflow's pydantic type.

Every task retries as the DAG's default args say, except on bad input
(:func:`~retrieval_eval.airflow.runtime.bad_input_fails_at_once`: waiting will not fix a file).
An outcome the workflow calls a failure (a store that was down, the run spooled) fails the
record task after it was kept, so the task retries. Return values stay out of the task logs
(``show_return_value_in_logs=False``); each step prints its one line instead
(:data:`retrieval_eval.airflow.lines.LINES`). Nothing heavy is imported here: the tasks import
their workflow when they run, so parsing a DAG file costs no pandas.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from airflow.sdk import get_current_context, task

# Airflow refuses to map more items than [core] max_map_length (1024 by default)
MAX_MAP_LENGTH = 1024
STEPS = ("plan", "execute", "reduce", "record")
BRIEF = "brief"  # the XCom key of the record task's small view of its outcome (Workflow.brief)


def _step(name: str, job: Mapping[str, Any], step: str, given: Callable[[Any], Any]) -> Any:
    """Rebuild workflow ``name`` from ``job`` in this DAG run and call its ``step`` with what
    ``given`` makes of it (the XCom read back as the workflow's type); bad input fails the task
    at once, an outcome the workflow calls a failure raises after it was kept. The result is
    JSON, and its one line goes to the log."""
    from retrieval_eval.airflow.lines import LINES
    from retrieval_eval.airflow.runtime import bad_input_fails_at_once, bind

    with bad_input_fails_at_once():
        flow = bind(name, job, get_current_context())
        value = getattr(flow, step)(given(flow))
        failure = flow.failure(value) if step == "record" else None
        if failure is not None:
            raise failure
    if isinstance(value, list):
        done: Any = [item.model_dump(mode="json") for item in value]
    else:
        done = value.model_dump(mode="json")
    line = LINES.get((name, step))
    if line is not None:
        print(line(done, job))
    return done


@task(show_return_value_in_logs=False)
def plan(workflow: str, job: dict[str, Any]) -> list[dict[str, Any]]:
    """Check every input and split the work into batches (at most Airflow's map length)."""
    planned: list[dict[str, Any]] = _step(workflow, job, "plan", lambda _flow: MAX_MAP_LENGTH)
    return planned


@task(show_return_value_in_logs=False)
def execute(workflow: str, job: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
    """Do one batch (mapped: one task instance per batch); it stores nothing, so it retries."""
    done: dict[str, Any] = _step(
        workflow, job, "execute", lambda flow: flow.batch_type.model_validate(batch)
    )
    return done


@task(show_return_value_in_logs=False)
def reduce(workflow: str, job: dict[str, Any], parts: list[dict[str, Any]]) -> dict[str, Any]:
    """Join the batches' parts, in plan order."""
    done: dict[str, Any] = _step(
        workflow, job, "reduce", lambda flow: [flow.part_type.model_validate(p) for p in parts]
    )
    return done


@task(show_return_value_in_logs=False)
def record(workflow: str, job: dict[str, Any], reduced: dict[str, Any]) -> dict[str, Any]:
    """Store what was reduced; the outcome is this task's XCom (a failure raises once kept)."""
    done: dict[str, Any] = _step(
        workflow, job, "record", lambda flow: flow.reduced_type.model_validate(reduced)
    )
    from retrieval_eval.airflow.outcome import announce
    from retrieval_eval.workflows.base import WORKFLOWS

    context = get_current_context()
    brief = WORKFLOWS[workflow].brief(done)
    if brief is not None:  # the small view the branch tasks pull instead of the whole outcome
        context["ti"].xcom_push(key=BRIEF, value=brief)
    announce(workflow, job, done, context)
    return done


@dataclass(frozen=True)
class Wired:
    """The four tasks' outputs (XComArgs) of one workflow in a DAG, to wire more tasks to."""

    planned: Any
    parts: Any
    reduced: Any
    outcome: Any


def workflow_tasks(
    workflow: str,
    job: Mapping[str, Any] | Any,
    *,
    task_ids: Mapping[str, str] | None = None,
    outlets: list[Any] | None = None,
) -> Wired:
    """Add the workflow's four tasks to the DAG (or task group) being defined; ``task_ids``
    renames steps (``{"plan": "load_golden_set", ...}``), by default each is its step's name;
    ``outlets`` are the record task's (its asset events carry the outcome: airflow/outcome.py).
    ``job`` may be an upstream task's XComArg instead (a job made at run time: the labelling
    DAG's judge job holds the pool's pairs)."""
    ids = {step: step for step in STEPS} | dict(task_ids or {})
    given = dict(job) if isinstance(job, Mapping) else job
    kwargs: dict[str, Any] = {"workflow": workflow, "job": given}
    planned: Any = plan.override(task_id=ids["plan"])(**kwargs)
    parts: Any = execute.override(task_id=ids["execute"]).partial(**kwargs).expand(batch=planned)
    reduced: Any = reduce.override(task_id=ids["reduce"])(**kwargs, parts=parts)
    recorder = record.override(task_id=ids["record"], **({"outlets": outlets} if outlets else {}))
    outcome: Any = recorder(**kwargs, reduced=reduced)
    return Wired(planned, parts, reduced, outcome)

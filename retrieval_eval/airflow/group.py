"""A labelled run inside a team's own DAG: ``evaluate_retrieval`` adds it as a task group.

::

    from retrieval_eval.airflow import evaluate_retrieval, verdict_of

    with DAG("index_build", ...):
        evaluated = build_index() >> evaluate_retrieval(set="handbook.demo", retriever="bm25")
        # verdict_of(evaluated): the run's outcome JSON (its "verdict", "run_id", "result")

The group holds the same four tasks the generated evaluation DAG runs, through the same adapter
(:mod:`retrieval_eval.airflow.adapter`): plan → retrieve (mapped over batches) → score → record,
with the same batches, retries (the DAG's default args), bad-input failures, store (the config's,
or the Airflow connection ``store_connection_id``) and spool when it is down. Its last task's
XCom is the outcome: the :class:`~retrieval_eval.workflows.recording.RunRecord` as JSON, whose
``verdict`` says ``baseline``, ``no_regression``, ``regression``, ``invalid_run`` or
``not_comparable``. Alerts stay the generated DAG's; a gate reads the verdict.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import TaskGroup

from retrieval_eval.airflow.adapter import workflow_tasks

RECORD_TASK = "record"


def evaluate_retrieval(
    set: str,  # the config's and the CLI's word for a golden set
    retriever: str,
    config_path: str | None = None,
    index_version: str | None = None,
    store_connection_id: str | None = None,
    *,
    group_id: str = "evaluate_retrieval",
    max_batches: int = 8,
    min_batch_questions: int = 25,
    lint: str = "off",
    baseline_run_id: int | None = None,
    thresholds: dict[str, Any] | None = None,
) -> TaskGroup:
    """Add a labelled run of ``retriever`` on ``set`` to the DAG being defined, as a task group.

    ``config_path`` is read by each task at run time (None: the usual lookup,
    ``$RETRIEVAL_EVAL_CONFIG`` first). ``index_version`` names the index build measured (a
    Jinja template is rendered, e.g. an upstream task's XCom); None: the triggering asset
    event's, if any. ``lint`` (``off``, ``warn``, ``fail``) lints the set before retrieval.
    ``thresholds`` override the config's (``{"max_top1_drop": 0.05}``). The DAG run's Params
    named as the generated DAG's (``depths``, ``max_top1_drop``, ...) apply here too.
    """
    job: dict[str, Any] = {
        "config_path": config_path,
        "set": set,
        "retriever": retriever,
        "index_version": index_version,
        "store_connection_id": store_connection_id,
        "max_batches": max_batches,
        "min_batch_questions": min_batch_questions,
        "lint": lint,
        "baseline_run_id": baseline_run_id,
        "thresholds": dict(thresholds or {}),
    }
    with TaskGroup(group_id=group_id) as group:
        workflow_tasks(
            "labelled_run",
            job,
            task_ids={
                "plan": "plan",
                "execute": "retrieve",
                "reduce": "score",
                "record": RECORD_TASK,
            },
        )
    return group


def verdict_of(group: TaskGroup) -> Any:
    """The outcome (XComArg) of a group :func:`evaluate_retrieval` added: its record task's."""
    record: Any = group.children[f"{group.group_id}.{RECORD_TASK}"]
    return record.output

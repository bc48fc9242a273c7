"""``evaluate_retrieval``: the labelled run as a task group inside any DAG (a team's index build).

The generated DAGs evaluate on a schedule or an asset event; a team that already has an
index-build DAG wants "promote the new index only if the evaluation passes" in that DAG. This
puts the same tasks the generated DAG runs (the same batches, retries, store, alerts and verdict:
:func:`retrieval_eval.airflow.factory.evaluation_tasks`) in a task group, and returns the
recorded verdict (:class:`retrieval_eval.airflow.outcome.Outcome`, as an XComArg) for
:func:`retrieval_eval.airflow.gate.retrieval_gate` or any task of the DAG::

    version = build_index()
    verdict = evaluate_retrieval(set="handbook.demo", retriever="candidate", index_version=version)
    retrieval_gate(verdict) >> promote(version)

The config is read when the DAG file is parsed (as the generated DAGs' file does): the
evaluation configured for the pair, if any, gives the batches, alerts and gates; the config's
``airflow:`` section the retries, timeouts and store connection.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from airflow.sdk import TaskGroup, XComArg

from retrieval_eval.airflow.factory import (
    dag_id_for,
    default_args_for,
    evaluation_tasks,
    job_for,
)
from retrieval_eval.config.models import EvaluationSpec, load_config


def evaluate_retrieval(
    set: str,
    retriever: str,
    config_path: str | Path | None = None,
    index_version: Any = None,
    store_connection_id: str | None = None,
    *,
    group_id: str | None = None,
) -> Any:
    """Add the labelled run of ``set`` × ``retriever`` to the DAG being defined, as a task group
    (``group_id``, default ``evaluate__<set>__<retriever>``); return its verdict's XComArg.

    ``config_path``: the config (None: ``$RETRIEVAL_EVAL_CONFIG`` and the usual lookup).
    ``index_version``: the index build measured (a value, a template or an upstream task's
    output, which the group then runs after), stored with the run. ``store_connection_id`` wins over the config's
    ``airflow.store_connection_id``. The run's key is ``airflow:<dag>:<run>#<group id>``.
    """
    config = load_config(config_path)
    spec = next(
        (e for e in config.evaluations if e.set == set and e.retriever == retriever),
        None,
    ) or EvaluationSpec(set=set, retriever=retriever, schedule=None)
    options = config.airflow
    if store_connection_id is not None:
        options = options.model_copy(update={"store_connection_id": store_connection_id})
    path = str(config.path) if config.path else None
    job = {k: v for k, v in job_for(spec, path, options, config.lint.mode).items() if k != "outlet"}
    job.pop("approve_baseline", None)  # the approval DAG belongs to the generated DAGs
    if index_version is not None:  # a value, a template or an XComArg: rendered at run time
        job["index_version"] = index_version
    with TaskGroup(
        group_id or group_id_for(set, retriever),
        default_args=cast(Any, default_args_for(spec, options)),  # attrs' converter types it _T
        tooltip=f"Retrieval evaluation: {set} × {retriever}",
    ) as group:
        recorded, _branch = evaluation_tasks(job, options)
    if isinstance(index_version, XComArg):
        # the build first: no batch may search the index before the task naming it is done
        index_version >> group
    return recorded["outcome"]


def group_id_for(set_identifier: str, retriever: str) -> str:
    """``evaluate__<set>__<retriever>``, cleaned as the generated DAGs' ids are."""
    return dag_id_for(set_identifier, retriever).replace("retrieval_eval__", "evaluate__", 1)

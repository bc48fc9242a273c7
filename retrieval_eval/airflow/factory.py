"""The DAG factory: one DAG per configured (golden set, retriever) pair.

The labelled run's four steps come from the one adapter (:mod:`retrieval_eval.airflow.adapter`),
under the task ids the DAG always had: load_golden_set (plan: every option checked, the
retriever's cache built, the set linted unless the config says ``lint: off``; ``lint: fail``
fails the run there on any error) → retrieve (execute, mapped over batches) → score (reduce) →
persist (record; its "Run page" extra link: :mod:`retrieval_eval.airflow.links`; its outlet
``retrieval-eval://<set>/<retriever>`` gets an event whose ``extra`` is the verdict:
:mod:`retrieval_eval.airflow.outcome`) →
check_regression → one of alert_regression / alert_invalid_run / no_regression / baseline (a
first run), plus alert_labels when the verdict names dead labels (expected ids no longer in the
index: their own alert, never a regression), plus, for an evaluation with ``approve_baseline``,
request_approval for a regression or a run under changed labels: it starts the evaluation's
approval DAG (approve_baseline, a human-in-the-loop request, → accept_baseline:
:mod:`retrieval_eval.airflow.approval`), so the evaluation's DAG run ends without waiting. The
evaluation's ``fail_on_regression`` and ``fail_on_dead_labels`` end the DAG run failed after the
alert.

Building a DAG is cheap: nothing here loads a set, builds a retriever or opens the store; the
tasks do that at run time through the workflow
(:class:`~retrieval_eval.workflows.labelled_run.LabelledRun`). This module wires them and
nothing else.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import DAG, Asset, AssetAny, AssetOrTimeSchedule, CronTriggerTimetable, Param

from retrieval_eval.airflow import tasks
from retrieval_eval.airflow.adapter import BRIEF, workflow_tasks
from retrieval_eval.airflow.deadline import deadline_for
from retrieval_eval.airflow.links import RunPageLink
from retrieval_eval.airflow.outcome import evaluation_asset_uri
from retrieval_eval.config.models import (
    AirflowOptions,
    Config,
    DagSpec,
    EvaluationSpec,
    ReplaySpec,
)

START_DATE = datetime(2024, 1, 1, tzinfo=UTC)
# the labelled run's steps under the task ids its DAG has always had
LABELLED_RUN_TASK_IDS = {
    "plan": "load_golden_set",
    "execute": "retrieve",
    "reduce": "score",
    "record": "persist",
}


def dag_id_for(set_identifier: str, retriever: str) -> str:
    """``retrieval_eval__<set>__<retriever>`` with anything but ``[A-Za-z0-9_-]`` made ``_``."""

    def clean(part: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]+", "_", part).strip("_") or "x"

    return f"retrieval_eval__{clean(set_identifier)}__{clean(retriever)}"


def schedule_for(evaluation: DagSpec) -> Any:
    """Cron, asset triggers, or both (either one starts a run); None means manual only."""
    assets = [Asset(uri) for uri in evaluation.assets]
    timetable = (
        CronTriggerTimetable(evaluation.schedule, timezone="UTC") if evaluation.schedule else None
    )
    if assets and timetable is not None:
        return AssetOrTimeSchedule(timetable=timetable, assets=AssetAny(*assets))
    if assets:
        return AssetAny(*assets)
    return timetable


def _doc(evaluation: EvaluationSpec, config_path: str | None) -> str:
    return (
        f"### Retrieval evaluation: `{evaluation.set}` × `{evaluation.retriever}`\n\n"
        f"Scores the retriever on the golden set (top-1 / top-3 hit rates overall, by form and "
        f"by hard class), saves the run to `eval_result`, compares it with the last good "
        f"comparable run and alerts on a regression.\n\n"
        f"- Schedule: `{evaluation.schedule or 'manual'}`; asset triggers: "
        f"{', '.join(f'`{a}`' for a in evaluation.assets) or 'none'}\n"
        f"- Config: `{config_path or 'default lookup'}`\n"
        f"- Manual runs take Params: `depths`, threshold overrides (`max_top1_drop`, "
        f"`max_top3_drop`, `max_drops` per depth), `fail_on_regression`, `baseline_run_id`.\n"
    )


def _override(kind: str, description: str, **schema: Any) -> Param:
    """A Param a manual run may set, None (the config's value) unless it does: every override
    is declared the same way, ``schema`` its JSON-schema bounds."""
    return Param(None, type=["null", kind], **schema, description=description)


def _params() -> dict[str, Param]:
    return {
        "max_top1_drop": _override(
            "number",
            "Override: largest allowed absolute top-1 hit-rate drop.",
            minimum=0,
            maximum=1,
        ),
        "max_top3_drop": _override(
            "number",
            "Override: largest allowed absolute top-3 hit-rate drop.",
            minimum=0,
            maximum=1,
        ),
        "depths": _override(
            "array",
            "Override: the gated depths, e.g. [1, 5] (in increasing order, 1-100).",
            items={"type": "integer"},
        ),
        "max_drops": _override(
            "object", 'Override: a gated depth\'s largest allowed drop, e.g. {"5": 0.05}.'
        ),
        "relevance_level": _override(
            "integer",
            "Override: the grade a target needs to count (1-3; graded labels).",
            minimum=1,
            maximum=3,
        ),
        "fail_on_regression": Param(
            False, type="boolean", description="End the DAG run failed after a regression alert."
        ),
        "baseline_run_id": _override(
            "integer",
            "Compare with this stored run instead of the automatic baseline.",
            minimum=1,
        ),
    }


def job_for(
    evaluation: EvaluationSpec,
    config_path: str | None,
    options: AirflowOptions,
    lint_mode: str = "off",
) -> dict[str, Any]:
    """What every task of the evaluation's DAG needs to know, as a small JSON-able dict: the
    fields of :class:`~retrieval_eval.workflows.labelled_run.LabelledRunJob` it sets."""
    return {
        "config_path": config_path,
        "set": evaluation.set,
        "retriever": evaluation.retriever,
        "max_batches": evaluation.max_batches,
        "min_batch_questions": evaluation.min_batch_questions,
        "fail_on_regression": evaluation.fail_on_regression,
        "fail_on_dead_labels": evaluation.fail_on_dead_labels,
        "alerts": [a.model_dump(exclude_none=True) for a in evaluation.alerts],
        "store_connection_id": options.store_connection_id,
        "ui_base_url": options.ui_base_url,
        "lint": lint_mode,
        # the asset the persist task updates with the verdict (airflow/outcome.py)
        "outlet": evaluation_asset_uri(evaluation.set, evaluation.retriever),
        # only when set: an evaluation without it keeps the job (and the DAG) it always had
        **({"approve_baseline": True} if evaluation.approve_baseline else {}),
    }


def default_args_for(evaluation: DagSpec, options: AirflowOptions) -> dict[str, Any]:
    """Every task retries with exponential backoff: each one does I/O (files, the retriever,
    the execution API, the store, the alert channels), and a nightly job must outlast a hiccup;
    and every try is killed after ``task_timeout_s``, so a hung one is retried, not waited for."""
    queue = {"queue": options.queue} if options.queue else {}
    return {
        **queue,
        "owner": evaluation.owner,
        "retries": options.retries,
        "retry_delay": timedelta(seconds=options.retry_delay_s),
        "retry_exponential_backoff": options.retry_backoff,
        "max_retry_delay": timedelta(seconds=options.max_retry_delay_s),
        "execution_timeout": timedelta(seconds=options.task_timeout_s),
    }


def build_evaluation_dag(
    evaluation: EvaluationSpec,
    *,
    config_path: str | None = None,
    airflow_options: AirflowOptions | None = None,
    note: str | None = None,
    lint_mode: str = "off",
) -> DAG:
    """Build the DAG for one evaluation; ``config_path`` is re-read by each task at run time.

    ``note`` is added to the DAG's documentation (the demo DAG says why it is there).
    ``lint_mode`` (``off``, ``warn``, ``fail``: the config's ``lint.mode``) lints the set in the
    plan task, before any retrieval.
    """
    options = airflow_options or AirflowOptions()
    job = job_for(evaluation, config_path, options, lint_mode)
    with new_dag(
        evaluation,
        options,
        subject=evaluation.set,
        dag_id=dag_id_for(evaluation.set, evaluation.retriever),
        tags=evaluation.tags,
        doc_md=_doc(evaluation, config_path) + (f"\n{note}\n" if note else ""),
        params=_params(),
    ) as dag:
        recorded, branch = evaluation_tasks(
            job,
            options,
            outlets=[Asset(job["outlet"])],
            approve_baseline=evaluation.approve_baseline,
        )
        if evaluation.approve_baseline:
            from retrieval_eval.airflow.approval import approval_asset_uri

            uri = approval_asset_uri(dag.dag_id)
            ask: Any = tasks.request_approval.override(outlets=[Asset(uri)])
            branch >> ask(recorded=recorded, approval_asset=uri)
    return dag


def evaluation_tasks(
    job: dict[str, Any],
    options: AirflowOptions,
    *,
    outlets: list[Asset] | None = None,
    approve_baseline: bool = False,
) -> tuple[Any, Any]:
    """The labelled run's tasks in the DAG or task group being defined, through the one adapter
    (load_golden_set → retrieve, mapped → score → persist, with ``outlets``), then
    check_regression → the alert branches. Returns persist's and check_regression's XComArgs."""
    # XComArgs stand in for the values at run time (typed Any for the checker)
    run = workflow_tasks("labelled_run", job, task_ids=LABELLED_RUN_TASK_IDS, outlets=outlets)
    recorded: Any = run.outcome
    # the DAG run's way to its run page (Airflow lets a task set no note on its DAG run)
    recorded.operator.operator_extra_links = (RunPageLink(),)
    approval = {"approve_baseline": True} if approve_baseline else {}
    # the branch and baseline tasks read the verdict and figures only: the record's small view
    brief: Any = recorded[BRIEF]
    branch: Any = tasks.check_regression(
        recorded=brief, ui_base_url=options.ui_base_url, **approval
    )
    branch >> [
        tasks.alert_regression(job=job, recorded=recorded),
        tasks.alert_invalid_run(job=job, recorded=recorded),
        tasks.alert_labels(job=job, recorded=recorded),
        tasks.no_regression(recorded=brief, job=job, record_task_id=recorded.operator.task_id),
        tasks.baseline(recorded=brief),
    ]
    return recorded, branch


def build_approval_dag(evaluation: EvaluationSpec, dag: DAG, job: dict[str, Any]) -> DAG:
    """The approval DAG of an evaluation with ``approve_baseline``: started by the event its
    evaluation DAG's ``request_approval`` emits, approve_baseline → accept_baseline. Apart, so
    the evaluation's DAG run ends at once (failed on a gated regression) while a person decides;
    one approval at a time, each asking about the newest run that asked."""
    from retrieval_eval.airflow.approval import (
        BaselineApproval,
        approval_asset_uri,
        approval_dag_id_for,
    )

    with DAG(
        dag_id=approval_dag_id_for(dag.dag_id),
        schedule=Asset(approval_asset_uri(dag.dag_id)),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["retrieval-eval", "approval", *evaluation.tags],
        doc_md=(
            f"### Baseline approval: `{evaluation.set}` × `{evaluation.retriever}`\n\n"
            f"Started when a run of `{dag.dag_id}` asks (a regression, or changed labels): "
            "Approve makes that run the baseline; Reject, or no answer in time, keeps it.\n"
        ),
        default_args=dag.default_args,
    ) as approval:
        approve = BaselineApproval(job=job, timeout_s=evaluation.approval_timeout_s)
        approve >> tasks.accept_baseline(job=job)
    return approval


def new_dag(
    spec: DagSpec,
    options: AirflowOptions,
    *,
    subject: str,
    dag_id: str,
    tags: list[str],
    doc_md: str,
    params: dict[str, Param],
    retriever: str | None = None,
) -> DAG:
    """A DAG with what the evaluation and replay DAGs share: the spec's schedule from
    START_DATE without catch-up, one run at a time, the "retrieval-eval" tag first, the spec's
    default args, templates rendered as native objects, and the spec's deadline (its alert
    names ``subject``, the set or sample, and ``retriever``, else the spec's)."""
    return DAG(
        dag_id=dag_id,
        schedule=schedule_for(spec),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["retrieval-eval", *tags],
        doc_md=doc_md,
        default_args=default_args_for(spec, options),
        params=params,
        render_template_as_native_obj=True,
        deadline=deadline_for(spec, subject, retriever),
    )


# the replay's steps under the task ids its DAG had (the reduce step is a task of its own)
REPLAY_TASK_IDS = {
    "plan": "load_sample",
    "execute": "replay",
    "reduce": "join_batches",
    "record": "compare_and_save",
}


def replay_dag_id_for(sample: str, retriever: str) -> str:
    """``retrieval_eval_replay__<sample>__<retriever>``, cleaned as :func:`dag_id_for`."""
    return dag_id_for(sample, retriever).replace("retrieval_eval__", "retrieval_eval_replay__", 1)


def build_replay_dag(
    spec: ReplaySpec,
    *,
    config_path: str | None = None,
    airflow_options: AirflowOptions | None = None,
) -> DAG:
    """The replay's four steps through the one adapter (:class:`~retrieval_eval.workflows.
    replay.Replay`), under the task ids its DAG has always had for three of them: load_sample
    (plan) → replay (execute, mapped over batches) → join_batches (reduce: the batches joined,
    given the rankings they are compared with) → compare_and_save (record) → check_drift → one
    of alert_drift / alert_invalid_replay / no_drift."""
    options = airflow_options or AirflowOptions()
    job = {
        "config_path": config_path,
        "sample": spec.sample,
        "retriever": spec.retriever,
        "against": spec.against,
        "max_batches": spec.max_batches,
        "min_batch_questions": spec.min_batch_questions,
        "alerts": [a.model_dump(exclude_none=True) for a in spec.alerts],
        "store_connection_id": options.store_connection_id,
        "ui_base_url": options.ui_base_url,
        "fail_on_drift": spec.fail_on_drift,
    }
    against = f"`{spec.against}`" if spec.against else "the previous replay"
    with new_dag(
        spec,
        options,
        subject=spec.sample,
        dag_id=replay_dag_id_for(spec.sample, spec.retriever),
        tags=["replay", *spec.tags],
        doc_md=(
            f"### Replay: sample `{spec.sample}` × `{spec.retriever}`\n\n"
            f"Asks the retriever every query of the stored sample and compares the rankings with "
            f"{against} (RBO, top-1 changes); ranking drift alerts on its own. The index version "
            "comes from the triggering asset event's `extra` (`index_version`).\n\n"
            f"- Config: `{config_path or 'default lookup'}`\n"
        ),
        params={
            "fail_on_drift": Param(
                False, type="boolean", description="End the DAG run failed after a drift alert."
            )
        },
    ) as dag:
        saved: Any = workflow_tasks("replay", job, task_ids=REPLAY_TASK_IDS).outcome
        tasks.check_drift(saved=saved) >> [
            tasks.alert_drift(job=job, saved=saved),
            tasks.alert_invalid_replay(job=job, saved=saved),
            tasks.no_drift(saved=saved),
        ]
    return dag


def build_dags(config: Config, *, note: str | None = None) -> dict[str, DAG]:
    """One DAG per configured evaluation, per replay series and per labelling entry
    (:mod:`retrieval_eval.airflow.labelling`), keyed by DAG id (duplicates are an error)."""
    dags: dict[str, DAG] = {}
    config_path = str(config.path) if config.path else None
    for replay_spec in config.replays:
        replay_dag = build_replay_dag(
            replay_spec, config_path=config_path, airflow_options=config.airflow
        )
        _add(dags, replay_dag, config, "replays", "rename a sample or retriever")
    for evaluation in config.evaluations:
        dag = build_evaluation_dag(
            evaluation,
            config_path=config_path,
            airflow_options=config.airflow,
            note=note,
            lint_mode=config.lint.mode,
        )
        _add(dags, dag, config, "evaluations", "rename a set or retriever")
        if evaluation.approve_baseline:
            job = job_for(evaluation, config_path, config.airflow, config.lint.mode)
            approval = build_approval_dag(evaluation, dag, job)
            dags[approval.dag_id] = approval
    if config.labelling:
        from retrieval_eval.airflow.labelling import build_labelling_dag

        for labelling in config.labelling:
            labelling_dag = build_labelling_dag(
                labelling, config_path=config_path, airflow_options=config.airflow
            )
            _add(dags, labelling_dag, config, "labelling entries", "give each set one judge")
    return dags


def _add(dags: dict[str, DAG], dag: DAG, config: Config, entries: str, fix: str) -> None:
    """Keep ``dag`` under its id; two ``entries`` of the config mapping to one id are an error
    that says how to tell them apart (``fix``)."""
    if dag.dag_id in dags:
        raise ValueError(f"{config.source}: two {entries} map to DAG id {dag.dag_id!r}; {fix}")
    dags[dag.dag_id] = dag

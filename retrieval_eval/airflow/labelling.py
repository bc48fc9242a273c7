"""The labelling DAG of a ``labelling:`` entry: a model judge grades a set's pooled pairs, and
its grades become the set's next version once the judge agrees with people and a person approves.

pool (the ``pool`` workflow: plan_pool → pool, mapped → reduce_pool → pool_rows) → judge_job
(the pool's unjudged pairs with their texts) → the ``judge`` workflow (plan_judge → judge,
mapped, on the config's queue like retrieval → reduce_judge → store_judgments: rater
``judge:<name>``) → calibrate (κ against people, stored) → check_calibration, a branch: passed →
approve_labels (a human-in-the-loop request: :class:`LabelsApproval`; the entry's ``approval:
false`` leaves it out) → the ``promote`` workflow (plan_promotion → lint_promotion →
check_promotion → promote: the set file's next version from the store's trusted judgments) →
rejudge (the set's stored runs scored again under the new labels); failed → alert_calibration
(kind ``calibration``: the judge, κ and its interval, min_kappa; the DAG run still succeeds,
nothing was promoted). Reject, or no answer in time, skips promote and rejudge.

Cost and progress are in the task logs (:data:`retrieval_eval.airflow.lines.LINES`: each judge
batch's answers and cost, the judging's total, the calibration's κ and cost). Only the factory
imports this module, and only for a config with ``labelling:`` entries.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import DAG, get_current_context, task

from retrieval_eval.airflow.adapter import workflow_tasks
from retrieval_eval.airflow.approval import PersonApproval
from retrieval_eval.airflow.factory import dag_id_for, new_dag
from retrieval_eval.config.models import AirflowOptions, LabellingSpec

POOL_TASK_IDS = {
    "plan": "plan_pool",
    "execute": "pool",
    "reduce": "reduce_pool",
    "record": "pool_rows",
}
JUDGE_TASK_IDS = {
    "plan": "plan_judge",
    "execute": "judge",
    "reduce": "reduce_judge",
    "record": "store_judgments",
}
PROMOTE_TASK_IDS = {
    "plan": "plan_promotion",
    "execute": "lint_promotion",
    "reduce": "check_promotion",
    "record": "promote",
}
APPROVE = "approve_labels"
ALERT = "alert_calibration"


def labelling_dag_id_for(set_identifier: str, judge: str) -> str:
    """``retrieval_eval_labelling__<set>__<judge>``, cleaned as the evaluation DAGs' ids."""
    return dag_id_for(set_identifier, judge).replace(
        "retrieval_eval__", "retrieval_eval_labelling__", 1
    )


def labelling_job(
    spec: LabellingSpec, config_path: str | None, options: AirflowOptions
) -> dict[str, Any]:
    """What the DAG's own tasks read (JSON): the entry's fields and the DAG's store and links."""
    return {
        "config_path": config_path,
        "set": spec.set,
        "judge": spec.judge,
        "retrievers": list(spec.retrievers),
        "max_pairs": spec.max_pairs,
        "min_kappa": spec.min_kappa,
        "calibration_pairs": spec.calibration_pairs,
        "max_batches": spec.max_batches,
        "alerts": [a.model_dump(exclude_none=True) for a in spec.alerts],
        "store_connection_id": options.store_connection_id,
        "ui_base_url": options.ui_base_url,
    }


def build_labelling_dag(
    spec: LabellingSpec,
    *,
    config_path: str | None = None,
    airflow_options: AirflowOptions | None = None,
) -> DAG:
    """The DAG of one ``labelling:`` entry (the module docstring says its tasks)."""
    options = airflow_options or AirflowOptions()
    job = labelling_job(spec, config_path, options)
    # the store: the Airflow connection's when configured (turned into a URL at run time)
    store = {"store_connection_id": c} if (c := options.store_connection_id) else {}
    pool_job = {
        "config_path": config_path,
        "set": spec.set,
        "retrievers": list(spec.retrievers),
        "depth": spec.depth,
        "fresh": spec.fresh,
        "max_batches": spec.max_batches,
        **store,
    }
    promote_job = {"config_path": config_path, "set": spec.set, "from_store": True, **store}
    approval = "an approval in Airflow" if spec.approval else "no approval (`approval: false`)"
    with new_dag(
        spec,
        options,
        subject=spec.set,
        retriever=f"judge:{spec.judge}",
        dag_id=labelling_dag_id_for(spec.set, spec.judge),
        tags=["labelling", *spec.tags],
        doc_md=(
            f"### Labelling: `{spec.set}` by judge `{spec.judge}`\n\n"
            f"Pools the top {spec.depth} of {', '.join(f'`{r}`' for r in spec.retrievers)}, asks "
            f"the model judge about the unjudged pairs, calibrates it against people (κ ≥ "
            f"{spec.min_kappa if spec.min_kappa is not None else 'its min_kappa'}), then, after "
            f"{approval}, promotes its grades into the set file and re-judges the stored runs. "
            "A failed calibration alerts (kind `calibration`) and promotes nothing.\n\n"
            f"- Config: `{config_path or 'default lookup'}`\n"
        ),
        params={},
    ) as dag:
        pooled = workflow_tasks("pool", pool_job, task_ids=POOL_TASK_IDS)
        judged = workflow_tasks(
            "judge", judge_job(job=job, pooled=pooled.outcome), task_ids=JUDGE_TASK_IDS
        )
        calibration: Any = calibrate(job=job, judged=judged.outcome)
        branch: Any = check_calibration(calibration=calibration, approval=spec.approval)
        promoted = workflow_tasks("promote", promote_job, task_ids=PROMOTE_TASK_IDS)
        if spec.approval:
            ask = LabelsApproval(job=job, timeout_s=spec.approval_timeout_s)
            branch >> ask >> promoted.planned
        else:
            branch >> promoted.planned
        branch >> alert_calibration(job=job, calibration=calibration)
        rejudge(job=job, promoted=promoted.outcome)
    return dag


@task(show_return_value_in_logs=False)
def judge_job(job: dict[str, Any], pooled: dict[str, Any]) -> dict[str, Any]:
    """The judge workflow's job: the pool's unjudged rows with a text, each pair once (rows left
    out are counted in the log, by why)."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.workflows.judge import JudgeJob, pairs_from_rows
    from retrieval_eval.workflows.labelled_run import resolve_set

    config = load_config(job["config_path"])
    golden = resolve_set(config, job["set"])
    rows = [Judgment.model_validate(row) for row in pooled["rows"]]
    pairs, left = pairs_from_rows(golden, rows)
    for why, count in sorted(left.items()):
        print(f"left out: {count} row(s): {why}")
    print(f"{len(pairs)} pair(s) of {golden.identifier} to ask judge:{job['judge']} about")
    context = get_current_context()
    made = JudgeJob(
        config_path=job["config_path"],
        set_identifier=golden.identifier,
        judge=job["judge"],
        pairs=pairs,
        max_pairs=job["max_pairs"],
        written_by=f"airflow:{context['dag_run'].dag_id}",
        max_batches=job["max_batches"],
    ).model_dump(mode="json")
    if job.get("store_connection_id"):  # the URL itself is made where it is used
        made["store_connection_id"] = job["store_connection_id"]
    return made


def _db(job: dict[str, Any]) -> str | None:
    """The store's URL from the DAG's Airflow connection, if it has one (None: the config's)."""
    from retrieval_eval.airflow.runtime import store_url

    return store_url(job) if job.get("store_connection_id") else None


@task(show_return_value_in_logs=False)
def calibrate(job: dict[str, Any], judged: dict[str, Any]) -> dict[str, Any]:
    """The judge against people on the set's people-graded pairs (texts from the pooled
    retrievers), stored; its line gives κ, its interval, min_kappa and the cost."""
    from retrieval_eval.airflow.lines import calibration_line
    from retrieval_eval.airflow.runtime import bad_input_fails_at_once
    from retrieval_eval.config.models import load_config
    from retrieval_eval.workflows.judge import calibrate as calibrate_judge
    from retrieval_eval.workflows.labelled_run import resolve_set

    with bad_input_fails_at_once():
        config = load_config(job["config_path"])
        golden = resolve_set(config, job["set"])
        result = calibrate_judge(
            config,
            golden,
            job["judge"],
            db=_db(job),
            retrievers=job["retrievers"],
            size=job["calibration_pairs"],
            written_by=f"airflow:{get_current_context()['dag_run'].dag_id}",
            min_kappa=job["min_kappa"],
        )
    done: dict[str, Any] = result.model_dump(mode="json")
    print(calibration_line(done, job))
    return done


@task.branch
def check_calibration(calibration: dict[str, Any], approval: bool) -> str:
    """Passed: on to the approval (or straight to the promotion); failed: the alert."""
    if not calibration["passed"]:
        return ALERT
    return APPROVE if approval else PROMOTE_TASK_IDS["plan"]


@task
def alert_calibration(job: dict[str, Any], calibration: dict[str, Any]) -> str:
    """The ``calibration`` alert: the judge, κ with its interval, min_kappa, what it means;
    once per DAG run and channel (the store's markers)."""
    from retrieval_eval.airflow.alerts import AlertMessage, send_alerts
    from retrieval_eval.airflow.lines import calibration_line
    from retrieval_eval.airflow.runtime import run_key, store_url
    from retrieval_eval.store import open_store

    message = AlertMessage(
        kind="calibration",
        set_identifier=calibration["set_identifier"],
        retriever=f"judge:{calibration['judge']}",
        summary=calibration_line(calibration, job),
        drift_reasons=[
            "its grades stay candidates for people: nothing was promoted",
            f"`retrieval-eval sets judge calibrate {calibration['set_identifier']} --judge "
            f"{calibration['judge']}` measures it again",
        ],
    )
    print(message.text())
    with open_store(store_url(job)) as store:
        outcome = send_alerts(
            job["alerts"], message, store=store, run_key=run_key(get_current_context())
        )
    print(outcome)
    return outcome


@task(show_return_value_in_logs=False)
def rejudge(job: dict[str, Any], promoted: dict[str, Any]) -> list[dict[str, Any]]:
    """The set's stored runs scored again against the version just promoted, stored."""
    from retrieval_eval.airflow.runtime import bad_input_fails_at_once
    from retrieval_eval.config.models import load_config
    from retrieval_eval.workflows.labelled_run import resolve_set
    from retrieval_eval.workflows.rejudge import rejudge_set

    with bad_input_fails_at_once():
        config = load_config(job["config_path"])
        golden = resolve_set(config, job["set"])  # the file as promote wrote it
        done = rejudge_set(config, golden, _db(job))
    counts: dict[str, int] = {}
    for item in done:
        counts[item.outcome] = counts.get(item.outcome, 0) + 1
    told = ", ".join(f"{n} {what}" for what, n in sorted(counts.items())) or "no stored run"
    print(
        f"{golden.identifier} version {promoted['entry']['version']}: {len(done)} stored "
        f"run(s) against its labels: {told}"
    )
    return [item.model_dump(mode="json") for item in done]


class LabelsApproval(PersonApproval):
    """Asks whether the judge's grades become the set's next version; the request names the
    judge, its calibration and the cost. Reject, or no answer in time, promotes nothing."""

    def __init__(self, *, job: dict[str, Any], timeout_s: float, **kwargs: Any) -> None:
        super().__init__(
            task_id=APPROVE,
            subject="Promote the judge's grades?",
            job=job,
            timeout_s=timeout_s,
            **kwargs,
        )

    def execute(self, context: Any) -> Any:
        ti = context["ti"]
        calibration = ti.xcom_pull(task_ids="calibrate")
        judged = ti.xcom_pull(task_ids=JUDGE_TASK_IDS["record"])
        self.subject, self.body = approval_request(calibration, judged, self.timeout_s)
        print(self.subject)
        return super().execute(context)


def approval_request(
    calibration: dict[str, Any], judged: dict[str, Any], timeout_s: float
) -> tuple[str, str]:
    """The approval's subject and Markdown body: the judge, its calibration, what it graded and
    at what cost, what each answer does. Figures only, redacted."""
    from retrieval_eval.formats.numbers import decimal
    from retrieval_eval.safety.redaction import redact

    name, identifier = calibration["judge"], calibration["set_identifier"]
    hours = f"{timeout_s / 3600:g} h" if timeout_s >= 3600 else f"{timeout_s:g} s"
    lines = [
        f"Promote **judge:{name}**'s grades into **{identifier}**'s next version?",
        "",
        f"- Calibration {calibration.get('id')}: Cohen's κ {decimal(calibration['kappa'], 3)} "
        f"[{decimal(calibration['kappa_low'], 3)}, {decimal(calibration['kappa_high'], 3)}] "
        f"on {calibration['pairs']} people-graded pairs, min_kappa "
        f"{decimal(calibration['min_kappa'], 2)}: passed.",
        f"- Judged: {judged['pairs']} pair(s), {judged['graded']} graded, {judged['unjudged']} "
        f"unjudged; cost ${judged['cost_usd'] + calibration.get('cost_usd', 0.0):.4f}.",
        "",
        f"**Approve**: the set file gets its next version (as `retrieval-eval sets promote "
        f"{identifier} --from-store`) and the stored runs are re-judged. **Reject**, or no "
        f"answer within {hours}: nothing is promoted.",
    ]
    subject = f"Promote judge:{name}'s grades into {identifier}?"
    return redact(subject), redact("\n".join(lines))

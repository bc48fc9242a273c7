"""The DAG factory: one DAG per configured (golden set, retriever) pair.

load_golden_set → retrieve (mapped over batches) → score → persist → check_regression →
one of alert_regression / alert_invalid_run / no_regression.

Building a DAG is cheap: nothing here loads a set, builds a retriever or opens the store; the
tasks do that at run time through :mod:`retrieval_eval.airflow.steps`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from airflow.sdk import (
    DAG,
    Asset,
    AssetAny,
    AssetOrTimeSchedule,
    CronTriggerTimetable,
    Param,
    get_current_context,
    task,
)
from airflow.sdk.exceptions import AirflowFailException

from retrieval_eval.airflow import steps
from retrieval_eval.config import AirflowOptions, Config, EvaluationSpec

START_DATE = datetime(2024, 1, 1, tzinfo=UTC)


def dag_id_for(set_identifier: str, retriever: str) -> str:
    """``retrieval_eval__<set>__<retriever>`` with anything but ``[A-Za-z0-9_-]`` made ``_``."""

    def clean(part: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]+", "_", part).strip("_") or "x"

    return f"retrieval_eval__{clean(set_identifier)}__{clean(retriever)}"


def schedule_for(evaluation: EvaluationSpec) -> Any:
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
        f"- Manual runs take Params: threshold overrides, `fail_on_regression`, "
        f"`baseline_run_id`.\n"
    )


def _params() -> dict[str, Param]:
    return {
        "max_top1_drop": Param(
            None,
            type=["null", "number"],
            minimum=0,
            maximum=1,
            description="Override: largest allowed absolute top-1 hit-rate drop.",
        ),
        "max_top3_drop": Param(
            None,
            type=["null", "number"],
            minimum=0,
            maximum=1,
            description="Override: largest allowed absolute top-3 hit-rate drop.",
        ),
        "fail_on_regression": Param(
            False, type="boolean", description="End the DAG run failed after a regression alert."
        ),
        "baseline_run_id": Param(
            None,
            type=["null", "integer"],
            minimum=1,
            description="Compare with this stored run instead of the automatic baseline.",
        ),
    }


def _store_url(config_path: str | None, options: AirflowOptions) -> str:
    """The store URL at run time: an Airflow connection when configured, else the usual lookup."""
    from airflow.sdk import BaseHook

    from retrieval_eval.config import load_config
    from retrieval_eval.store import store_url_for

    return store_url_for(
        load_config(config_path),
        options.store_connection_id,
        lambda conn_id: BaseHook.get_connection(conn_id).get_uri(),
    )


def build_evaluation_dag(
    evaluation: EvaluationSpec,
    *,
    config_path: str | None = None,
    airflow_options: AirflowOptions | None = None,
) -> DAG:
    """Build the DAG for one evaluation; ``config_path`` is re-read by each task at run time."""
    options = airflow_options or AirflowOptions()
    set_name, retriever_name = evaluation.set, evaluation.retriever
    alerts = [a.model_dump(exclude_none=True) for a in evaluation.alerts]
    retry: dict[str, Any] = {
        "retries": options.retries,
        "retry_delay": timedelta(seconds=options.retry_delay_s),
        "retry_exponential_backoff": True,
        "max_retry_delay": timedelta(seconds=options.max_retry_delay_s),
    }

    with DAG(
        dag_id=dag_id_for(set_name, retriever_name),
        schedule=schedule_for(evaluation),
        start_date=START_DATE,
        catchup=False,
        max_active_runs=1,
        tags=["retrieval-eval", *evaluation.tags],
        doc_md=_doc(evaluation, config_path),
        default_args={"owner": evaluation.owner},
        params=_params(),
        render_template_as_native_obj=True,
    ) as dag:

        @task
        def load_golden_set() -> list[dict[str, Any]]:
            """Validate the set; a bad set fails here with every problem listed."""
            return steps.plan_batches(config_path, set_name, evaluation.max_batches)

        @task(**retry)
        def retrieve(batch: dict[str, Any]) -> dict[str, Any]:
            return steps.retrieve_batch(
                config_path,
                set_name,
                retriever_name,
                batch["fingerprint"],
                batch["start"],
                batch["stop"],
            )

        @task
        def score(batch_results: list[dict[str, Any]]) -> dict[str, Any]:
            context = get_current_context()
            dag_run = context["dag_run"]
            return steps.reduce_results(
                config_path,
                set_name,
                retriever_name,
                list(batch_results),
                run_key=f"airflow:{dag_run.dag_id}:{dag_run.run_id}",
                started_at=getattr(dag_run, "start_date", None),
            )

        @task(**retry)
        def persist(result: dict[str, Any]) -> dict[str, Any]:
            params = get_current_context()["params"]
            return steps.persist_result(
                config_path,
                result,
                store_url=_store_url(config_path, options),
                baseline_run_id=params.get("baseline_run_id"),
                threshold_overrides={
                    "max_top1_drop": params.get("max_top1_drop"),
                    "max_top3_drop": params.get("max_top3_drop"),
                },
            )

        @task.branch
        def check_regression(recorded: dict[str, Any]) -> str:
            return steps.choose_branch(recorded)

        def _alert(kind: str, result: dict[str, Any], recorded: dict[str, Any]) -> str:
            from retrieval_eval.airflow.alerts import build_message, send_alerts

            message = build_message(kind, result, recorded, options.ui_base_url)
            print(message.text())  # the task log shows what was sent; no channel secrets in it
            sent = send_alerts(alerts, message)
            return ", ".join(sent) or "no alert channel configured"

        @task
        def alert_regression(result: dict[str, Any], recorded: dict[str, Any]) -> str:
            sent = _alert("regression", result, recorded)
            if get_current_context()["params"].get("fail_on_regression"):
                raise AirflowFailException(
                    f"retrieval regression (alert sent: {sent}); fail_on_regression is set"
                )
            return sent

        @task
        def alert_invalid_run(result: dict[str, Any], recorded: dict[str, Any]) -> str:
            sent = _alert("invalid_run", result, recorded)
            raise AirflowFailException(
                f"the run is invalid: {result['error_count']} of {result['question_count']} "
                f"questions errored (alert sent: {sent})"
            )

        @task
        def no_regression(recorded: dict[str, Any]) -> str:
            return str(recorded["verdict"].get("summary") or recorded["verdict"]["state"])

        # XComArgs stand in for the values at run time (typed Any for the checker)
        batch_results: Any = retrieve.expand(batch=load_golden_set())
        result: Any = score(batch_results)
        recorded: Any = persist(result)
        branch = check_regression(recorded)
        branch >> [
            alert_regression(result, recorded),
            alert_invalid_run(result, recorded),
            no_regression(recorded),
        ]
    return dag


def build_dags(config: Config) -> dict[str, DAG]:
    """One DAG per configured evaluation, keyed by DAG id (duplicates are an error)."""
    dags: dict[str, DAG] = {}
    config_path = str(config.path) if config.path else None
    for evaluation in config.evaluations:
        dag = build_evaluation_dag(
            evaluation, config_path=config_path, airflow_options=config.airflow
        )
        if dag.dag_id in dags:
            raise ValueError(
                f"{config.source}: two evaluations map to DAG id {dag.dag_id!r}; "
                "rename a set or retriever"
            )
        dags[dag.dag_id] = dag
    return dags

"""The DAG's tasks, defined once: thin Airflow wrappers over :mod:`retrieval_eval.airflow.steps`.

Each task takes the evaluation's ``job`` (a small JSON-able dict: config path, set, retriever,
alert channels, ...), so the factory only wires them into one DAG per evaluation. The work and
everything heavy (pandas, SQLAlchemy, the adapters) is imported inside the tasks, at run time:
a process that parses the DAG file imports none of it.

The tasks whose return values are large JSON (lint findings, question results, the run, what
was recorded) keep them out of their logs (``show_return_value_in_logs=False``): each prints one
line a person reads instead (:func:`retrieval_eval.airflow.steps.score_line`, ``verdict_line``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from airflow.sdk import get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from retrieval_eval.airflow.links import dashboard_url


@contextlib.contextmanager
def bad_input_fails_at_once() -> Iterator[None]:
    """A bad set, config or name fails the task without retries: waiting will not fix a file.

    Everything else (an unreachable store or service, a timeout) raises as it is and retries.
    """
    from retrieval_eval.errors import InvalidInputError

    try:
        yield
    except InvalidInputError as exc:
        raise AirflowFailException(str(exc)) from None


def store_url(job: dict[str, Any]) -> str:
    """The store at run time: the Airflow connection when configured, else the usual lookup."""
    from airflow.sdk import BaseHook

    from retrieval_eval.airflow.hooks import connection_store
    from retrieval_eval.config.models import load_config
    from retrieval_eval.store import store_url_for

    return store_url_for(
        load_config(job["config_path"]),
        job.get("store_connection_id"),
        lambda conn_id: connection_store(BaseHook.get_connection(conn_id)),
    )


def manual_overrides() -> dict[str, dict[str, Any]]:
    """This DAG run's Params as the pipeline's overrides (checked: a bad one fails the task at
    once, naming the Param), the same in every task of the run."""
    from retrieval_eval.airflow import steps

    with bad_input_fails_at_once():
        return steps.manual_overrides(get_current_context()["params"])


def dag_run_marks() -> dict[str, Any]:
    """What a step records of the DAG run its task is in: the run key (the dashboard's link back
    to the run) and the index build the triggering asset event's extra names (None: not started
    by one). Labelled runs and replays read them the same way."""
    from retrieval_eval.airflow import steps
    from retrieval_eval.reports.links import run_key_for

    context = get_current_context()
    dag_run = context["dag_run"]
    return {
        "run_key": run_key_for(dag_run.dag_id, dag_run.run_id),
        "index_version": steps.index_version(context.get("triggering_asset_events")),
    }


def group_prefix() -> str:
    """``"<group id>."`` when the running task is inside a task group (``evaluate_retrieval`` in
    a team's DAG), else ``""``: what the task ids it names (branches) need before them."""
    task_id = str(get_current_context()["ti"].task_id)
    return task_id.rpartition(".")[0] + "." if "." in task_id else ""


@task
def load_golden_set(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Validate the set (a bad set fails here, every problem listed) and every other option
    (the store URL included) before any retriever code is imported, fill the retriever's cache
    once, and split the questions into batches. A manual run's Params (depths, thresholds)
    are checked here too, before any retrieval."""
    from retrieval_eval.airflow import steps

    overrides = manual_overrides()
    with bad_input_fails_at_once():
        return steps.plan_batches(
            job["config_path"],
            job["set"],
            job["max_batches"],
            retriever_name=job["retriever"],
            check_store=lambda: store_url(job),
            min_batch_questions=job["min_batch_questions"],
            overrides=overrides,
        )


@task(show_return_value_in_logs=False)
def lint(job: dict[str, Any]) -> dict[str, Any]:
    """Before retrieval: dead labels and the set's other lint findings (config ``lint:``).

    ``warn`` records them (the run's details, the labels alert); ``fail`` fails the DAG run at
    once, without retries, when any error is found.
    """
    from retrieval_eval.airflow import steps

    with bad_input_fails_at_once():
        outcome = steps.lint_set(job["config_path"], job["set"], job["retriever"], job["lint"])
    print(f"lint: {outcome['errors']} errors, {outcome['warnings']} warnings")
    return outcome


@task(show_return_value_in_logs=False)
def retrieve(job: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
    from retrieval_eval.airflow import steps

    # Resolving the store URL registers its password with the redaction policy: a search service
    # that echoes it must not put it in this task's log or XCom. The store itself is persist's
    # business, so a store misconfiguration does not fail retrieval here.
    with contextlib.suppress(Exception):
        store_url(job)
    with bad_input_fails_at_once():
        return steps.retrieve_batch(
            job["config_path"],
            job["set"],
            job["retriever"],
            batch["fingerprint"],
            batch["start"],
            batch["stop"],
            manual_overrides()["run"],
        )


@task(show_return_value_in_logs=False)
def score(
    job: dict[str, Any],
    batch_results: list[dict[str, Any]],
    lint_outcome: dict[str, Any] | None = None,
    index_version: Any = None,
) -> dict[str, Any]:
    """Aggregate the batches into the run. ``index_version`` (``evaluate_retrieval``'s, e.g. the
    build task's output) wins over the triggering asset events'; a run of a task group gets a
    run key of its own (``airflow:<dag>:<run>#<group>``: one DAG run may evaluate twice)."""
    from retrieval_eval.airflow import steps
    from retrieval_eval.evaluation.results import index_version_text

    marks = dag_run_marks()
    if index_version_text(index_version) is not None:
        marks["index_version"] = index_version_text(index_version)
    if group_prefix():
        marks["run_key"] += "#" + group_prefix().rstrip(".")
    with bad_input_fails_at_once():
        result = steps.reduce_results(
            job["config_path"],
            job["set"],
            job["retriever"],
            list(batch_results),
            started_at=getattr(get_current_context()["dag_run"], "start_date", None),
            overrides=manual_overrides()["run"],
            lint=lint_outcome,
            **marks,
        )
    print(steps.score_line(result))
    return result


@task(show_return_value_in_logs=False)
def persist(job: dict[str, Any], result: dict[str, Any]) -> dict[str, Any]:
    from retrieval_eval.airflow import steps

    params = get_current_context()["params"]
    with bad_input_fails_at_once():
        recorded = steps.persist_result(
            job["config_path"],
            result,
            store_url=store_url(job),
            baseline_run_id=params.get("baseline_run_id"),
            threshold_overrides=manual_overrides()["thresholds"],
            approve_baseline=bool(job.get("approve_baseline")),
        )
    # Airflow 3's execution API lets a task set no note on its own DAG run: the log (and the
    # task's "Run page" extra link, airflow/links.py) says where the run page is
    print(steps.verdict_line(recorded, dashboard_url(job.get("ui_base_url")), result))
    emit_outcome(job, result, recorded)
    return recorded


def emit_outcome(job: dict[str, Any], result: dict[str, Any], recorded: dict[str, Any]) -> None:
    """The recorded verdict (:mod:`retrieval_eval.airflow.outcome`) as this task's ``outcome``
    XCom and, when the job names its outlet asset, as that asset event's ``extra``."""
    from airflow.sdk import Asset

    from retrieval_eval.airflow.outcome import outcome_of
    from retrieval_eval.reports.links import run_page_url

    page = run_page_url(dashboard_url(job.get("ui_base_url")), recorded.get("run_id"))
    outcome = outcome_of(result, recorded, page)
    context = get_current_context()
    context["ti"].xcom_push(key="outcome", value=outcome)
    if job.get("outlet"):
        context["outlet_events"][Asset(job["outlet"])].extra = outcome


@task.branch
def check_regression(
    recorded: dict[str, Any], ui_base_url: str | None = None, approve_baseline: bool = False
) -> list[str]:
    from retrieval_eval.airflow import steps

    branches = steps.choose_branches(recorded, approve_baseline)
    print(f"{steps.verdict_line(recorded, dashboard_url(ui_base_url))} → {', '.join(branches)}")
    return [group_prefix() + branch for branch in branches]


def _alert(
    job: dict[str, Any],
    kind: str,
    result: dict[str, Any],
    recorded: dict[str, Any],
    *,
    shown_if_unsent: bool = True,
) -> str:
    """Build and send the run's alert of ``kind``; the task log shows it (after the send, and
    only if it went out, when not ``shown_if_unsent``: a recovery most runs do not send)."""
    from retrieval_eval.airflow.alerts import build_message, send_alerts
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.recording import Recorded

    message = build_message(
        kind,
        RunResult.model_validate(result),
        Recorded.model_validate(recorded),
        job.get("ui_base_url"),
    )
    if shown_if_unsent:
        print(message.text())  # the task log shows what was sent; no channel secrets in it
    with open_store(store_url(job)) as store:
        outcome = send_alerts(job["alerts"], message, store=store, run_key=result["run_key"])
    if not shown_if_unsent and outcome.startswith("sent"):
        print(message.text())
    print(outcome)
    return outcome


@task
def alert_regression(job: dict[str, Any], result: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Sends the regression alert, then fails the DAG run when the evaluation's config or the
    manual run's Param says ``fail_on_regression``: a scheduled run ends red, not green."""
    outcome = _alert(job, "regression", result, recorded)
    if job.get("fail_on_regression") or get_current_context()["params"].get("fail_on_regression"):
        raise AirflowFailException(f"retrieval regression ({outcome}); fail_on_regression is set")
    return outcome


@task
def alert_invalid_run(job: dict[str, Any], result: dict[str, Any], recorded: dict[str, Any]) -> str:
    outcome = _alert(job, "invalid_run", result, recorded)
    raise AirflowFailException(
        f"the run is invalid: {result['error_count']} of {result['question_count']} "
        f"questions errored ({outcome})"
    )


@task
def alert_labels(job: dict[str, Any], result: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Labels need attention (expected ids no longer in the index): its own alert kind, sent
    beside the verdict's branch, never as a regression. With the evaluation's
    ``fail_on_dead_labels`` the DAG run then ends failed."""
    outcome = _alert(job, "labels", result, recorded)
    if job.get("fail_on_dead_labels"):
        raise AirflowFailException(f"labels need attention ({outcome}); fail_on_dead_labels is set")
    return outcome


@task
def no_regression(
    recorded: dict[str, Any],
    job: dict[str, Any] | None = None,
    result: dict[str, Any] | None = None,
) -> str:
    """A passing run; on a channel whose last alert for this set and retriever was a
    regression, it sends the ``recovered`` message that closes it (once)."""
    from retrieval_eval.airflow.alerts import carries

    summary = str(recorded["verdict"].get("summary") or recorded["verdict"]["state"])
    if job and result and any(carries(spec, "recovered") for spec in job["alerts"]):
        _alert(job, "recovered", result, recorded, shown_if_unsent=False)
    return summary


@task
def baseline(recorded: dict[str, Any]) -> str:
    """Nothing to compare with yet: this run is the baseline (unless refused for dead labels)."""
    return str(recorded["verdict"].get("summary") or recorded["verdict"]["state"])


@task
def request_approval(recorded: dict[str, Any], approval_asset: str) -> str:
    """(``approve_baseline``) Asks for the approval in the approval DAG: an event on
    ``approval_asset`` (this task's outlet) naming the saved run. The evaluation's DAG run goes
    on and ends as its verdict says, failed at once on a gated regression; the approval waits
    in a DAG run of its own."""
    from airflow.sdk import Asset

    run_id = int(recorded["run_id"])
    get_current_context()["outlet_events"][Asset(approval_asset)].extra = {"run_id": run_id}
    return f"asked for approval of run {run_id} as the baseline ({approval_asset})"


@task
def accept_baseline(job: dict[str, Any]) -> str:
    """After an approval (``approve_baseline``): the run the triggering asset event names
    becomes the baseline, exactly as ``retrieval-eval runs accept`` makes it one."""
    from retrieval_eval.airflow import steps

    run_id = steps.approval_run_id(get_current_context().get("triggering_asset_events"))
    with bad_input_fails_at_once():
        message = steps.accept_run(store_url(job), run_id)
    print(message)
    return message

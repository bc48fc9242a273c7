"""The Airflow-only tasks after a workflow's own (which :mod:`retrieval_eval.airflow.adapter`
adds). The evaluation DAG's: the branch on the verdict, the alerts, the passing and first-run
ends, and the approval request and acceptance (``approve_baseline``). The replay DAG's: the
branch on the drift state, the ``drift`` and ``invalid_replay`` alerts (their own kinds, claimed
once per DAG run and channel as a labelled run's, never mixed with a regression verdict) and
the end with no drift.

Each takes the DAG's ``job`` (a small JSON-able dict: config path, set or sample, retriever,
alert channels, ...) and the record task's outcome: ``recorded``, the run's
:class:`~retrieval_eval.workflows.recording.RunRecord` as JSON, its result included; ``saved``,
the replay's :class:`~retrieval_eval.replay.record.ReplayRecord` as JSON. Everything heavy is
imported inside the tasks, at run time: parsing the DAG file imports none of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from retrieval_eval.airflow.links import dashboard_url
from retrieval_eval.airflow.runtime import bad_input_fails_at_once, store_url

if TYPE_CHECKING:
    from retrieval_eval.airflow.alerts import AlertMessage
    from retrieval_eval.replay.record import ReplayRecord


@task.branch
def check_regression(
    recorded: dict[str, Any], ui_base_url: str | None = None, approve_baseline: bool = False
) -> list[str]:
    from retrieval_eval.airflow.branching import choose_branches
    from retrieval_eval.airflow.lines import verdict_line

    branches = choose_branches(recorded, approve_baseline)
    line = verdict_line(recorded, dashboard_url(ui_base_url), recorded.get("result"))
    print(f"{line} → {', '.join(branches)}")
    from retrieval_eval.airflow.runtime import group_prefix

    return [group_prefix(get_current_context()) + branch for branch in branches]


def _alert(
    job: dict[str, Any],
    kind: str,
    recorded: dict[str, Any],
    *,
    shown_if_unsent: bool = True,
) -> str:
    """Build and send the run's alert of ``kind``."""
    from retrieval_eval.airflow.alerts import build_message
    from retrieval_eval.workflows.recording import RunRecord

    record = RunRecord.model_validate(recorded)
    message = build_message(kind, record.result, record, job.get("ui_base_url"))
    return _send(job, message, record.result.run_key, shown_if_unsent=shown_if_unsent)


def _send(
    job: dict[str, Any], message: AlertMessage, run_key: str, *, shown_if_unsent: bool = True
) -> str:
    """Send ``message`` to the job's channels, claimed once per DAG run (``run_key``) and
    channel; the task log shows it (after the send, and only if it went out, when not
    ``shown_if_unsent``: a recovery most runs do not send)."""
    from retrieval_eval.airflow.alerts import send_alerts
    from retrieval_eval.store import open_store

    if shown_if_unsent:
        print(message.text())  # the task log shows what was sent; no channel secrets in it
    with open_store(store_url(job)) as store:
        outcome = send_alerts(job["alerts"], message, store=store, run_key=run_key)
    if not shown_if_unsent and outcome.startswith("sent"):
        print(message.text())
    print(outcome)
    return outcome


@task
def alert_regression(job: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Sends the regression alert, then fails the DAG run when the evaluation's config or the
    manual run's Param says ``fail_on_regression``: a scheduled run ends red, not green."""
    outcome = _alert(job, "regression", recorded)
    if job.get("fail_on_regression") or get_current_context()["params"].get("fail_on_regression"):
        raise AirflowFailException(f"retrieval regression ({outcome}); fail_on_regression is set")
    return outcome


@task
def alert_invalid_run(job: dict[str, Any], recorded: dict[str, Any]) -> str:
    outcome = _alert(job, "invalid_run", recorded)
    result = recorded["result"]
    raise AirflowFailException(
        f"the run is invalid: {result['error_count']} of {result['question_count']} "
        f"questions errored ({outcome})"
    )


@task
def alert_labels(job: dict[str, Any], recorded: dict[str, Any]) -> str:
    """Labels need attention (expected ids no longer in the index): its own alert kind, sent
    beside the verdict's branch, never as a regression. With the evaluation's
    ``fail_on_dead_labels`` the DAG run then ends failed."""
    outcome = _alert(job, "labels", recorded)
    if job.get("fail_on_dead_labels"):
        raise AirflowFailException(f"labels need attention ({outcome}); fail_on_dead_labels is set")
    return outcome


@task
def no_regression(
    recorded: dict[str, Any], job: dict[str, Any] | None = None, record_task_id: str | None = None
) -> str:
    """A passing run; on a channel whose last alert for this set and retriever was a
    regression, it sends the ``recovered`` message that closes it (once). ``recorded`` may be
    the record's small view: the whole record is then pulled from ``record_task_id`` only when
    a channel may get that message."""
    from retrieval_eval.airflow.alerts import carries
    from retrieval_eval.airflow.lines import worded_verdict

    summary = str(worded_verdict(recorded)["summary"])
    if job and any(carries(spec, "recovered") for spec in job["alerts"]):
        if record_task_id is not None:
            recorded = get_current_context()["ti"].xcom_pull(task_ids=record_task_id)
        _alert(job, "recovered", recorded, shown_if_unsent=False)
    return summary


@task
def baseline(recorded: dict[str, Any]) -> str:
    """Nothing to compare with yet: this run is the baseline (unless refused for dead labels)."""
    from retrieval_eval.airflow.lines import worded_verdict

    return str(worded_verdict(recorded)["summary"])


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
    from retrieval_eval.airflow.approval import accept_run, approval_run_id

    run_id = approval_run_id(get_current_context().get("triggering_asset_events"))
    with bad_input_fails_at_once():
        message = accept_run(store_url(job), run_id)
    print(message)
    return message


def _replay(saved: dict[str, Any]) -> ReplayRecord:
    """The replay the record task's XCom carries."""
    from retrieval_eval.replay.record import ReplayRecord

    return ReplayRecord.model_validate(saved)


def _replay_alert(job: dict[str, Any], kind: str, saved: ReplayRecord) -> str:
    from retrieval_eval.airflow.alerts.message import replay_message

    message = replay_message(kind, saved, job.get("ui_base_url"))
    return _send(job, message, saved.run_key)


@task.branch
def check_drift(saved: dict[str, Any]) -> str:
    from retrieval_eval.airflow.branching import drift_branch

    return drift_branch(_replay(saved).comparison.state)


@task
def alert_drift(job: dict[str, Any], saved: dict[str, Any]) -> str:
    """Sends the drift alert, then fails the DAG run when the replay's config or the manual
    run's Param says ``fail_on_drift``."""
    outcome = _replay_alert(job, "drift", _replay(saved))
    if job.get("fail_on_drift") or get_current_context()["params"].get("fail_on_drift"):
        raise AirflowFailException(f"ranking drift ({outcome}); fail_on_drift is set")
    return outcome


@task
def alert_invalid_replay(job: dict[str, Any], saved: dict[str, Any]) -> str:
    """Sends the invalid-replay alert and fails: too many queries failed, or nothing was
    compared (``empty``)."""
    from retrieval_eval.reports.replay import reason_lines

    record = _replay(saved)
    outcome = _replay_alert(job, "invalid_replay", record)
    comparison = record.comparison
    if comparison.state == "empty":
        raise AirflowFailException(f"{'; '.join(comparison.reasons)} ({outcome})")
    why = "; ".join(reason_lines(comparison.error_reasons()))
    raise AirflowFailException(
        f"the replay is invalid: {comparison.errors} of {len(record.rankings)} queries failed"
        f"{f' ({why})' if why else ''} ({outcome})"
    )


@task
def no_drift(saved: dict[str, Any]) -> str:
    from retrieval_eval.reports.replay import headline

    return headline(_replay(saved)).splitlines()[0]

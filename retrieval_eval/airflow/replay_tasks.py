"""A replay DAG's tasks: each a thin Airflow wrapper over one step of the
:class:`~retrieval_eval.workflows.replay.Replay` workflow, which the CLI's ``replay`` runs too.

Each takes the series' ``job`` (config path, sample, retriever, against, alert channels, ...);
batches, parts and the replay travel as the workflow's models' JSON. The ranking-drift verdict
is its own alert kind (``drift``, ``invalid_replay``), claimed once per DAG run and channel like
a labelled run's, and never mixed with a regression verdict.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from retrieval_eval.airflow.runtime import bad_input_fails_at_once, dag_run_marks, store_url
from retrieval_eval.reports.links import replay_page_url

if TYPE_CHECKING:
    from retrieval_eval.replay.record import ReplayRecord
    from retrieval_eval.workflows.replay import Replay

BRANCH_DRIFT = "alert_drift"
BRANCH_INVALID = "alert_invalid_replay"
BRANCH_OK = "no_drift"


def _replay(job: dict[str, Any], **marks: Any) -> Replay:
    """The workflow of the series ``job`` names, its store resolved in this task (the Airflow
    connection, else the usual lookup), with ``marks`` (the DAG run's key, the index version)."""
    from retrieval_eval.workflows.replay import Replay, ReplayJob

    return Replay(
        ReplayJob(
            config_path=job["config_path"],
            sample=job["sample"],
            retriever=job["retriever"],
            against=job.get("against"),
            min_batch_questions=job.get("min_batch_questions", 1),
            store_url=store_url(job),
            **marks,
        )
    )


def _record(saved: dict[str, Any]) -> ReplayRecord:
    from retrieval_eval.replay.record import ReplayRecord

    return ReplayRecord.model_validate(saved)


@task
def load_sample(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Draw and store the sample once, fill the retrievers' caches, split into batches."""
    from retrieval_eval.airflow.adapter import MAX_MAP_LENGTH

    with bad_input_fails_at_once():
        batches = _replay(job).plan(min(job["max_batches"], MAX_MAP_LENGTH))
    print(f"sample {job['sample']}: {batches[-1].stop} queries in {len(batches)} batches")
    return [b.model_dump(mode="json") for b in batches]


@task
def replay(job: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
    from retrieval_eval.workflows.replay import ReplayBatch

    with bad_input_fails_at_once():
        return _replay(job).execute(ReplayBatch.model_validate(batch)).model_dump(mode="json")


@task
def compare_and_save(
    job: dict[str, Any], batches: list[dict[str, Any]], planned: list[dict[str, Any]]
) -> dict[str, Any]:
    """Join the batches, compare with the replay before (or the ``against`` retriever), save,
    and log the verdict as one line; the index version comes from the triggering asset event's
    extra. A store that cannot take it spools it and fails the task for a retry."""
    from retrieval_eval.workflows.replay import ReplayPart

    with bad_input_fails_at_once():
        flow = _replay(job, **dag_run_marks())
        saved = flow.record(flow.reduce([ReplayPart.model_validate(b) for b in batches]))
    _retry_when_spooled(saved)
    from retrieval_eval.reports.replay import headline

    link = replay_page_url(job.get("ui_base_url"), saved.replay_id)
    print(headline(saved).replace("\n", "; ") + (f" — {link}" if link else ""))
    return saved.model_dump(mode="json")


def _retry_when_spooled(saved: ReplayRecord) -> None:
    """A replay the store did not take: where it went, as the CLI says it, then
    StoreUnavailableError so the task retries with backoff (as ``persist`` does for a run)."""
    from retrieval_eval.errors import StoreUnavailableError

    if saved.problem is None:
        return
    print(saved.notes[-1])  # where it went, and the command that saves it
    if saved.spool_path is None:  # the spool and the temporary folder both failed
        raise StoreUnavailableError(
            "result store unreachable, and the replay could not be spooled: its rankings "
            "stay in this DAG run, and the task retries"
        )
    raise StoreUnavailableError(
        f"result store unreachable; replay spooled to {saved.spool_path} "
        "(`retrieval-eval db flush` saves it later)"
    )


def choose_branch(state: str) -> str:
    """The branch a replay's drift state takes: nothing compared is never "no drift"."""
    if state in ("invalid", "empty"):
        return BRANCH_INVALID
    if state == "drift":
        return BRANCH_DRIFT
    return BRANCH_OK


@task.branch
def check_drift(saved: dict[str, Any]) -> str:
    return choose_branch(_record(saved).comparison.state)


def _alert(job: dict[str, Any], kind: str, saved: ReplayRecord) -> str:
    from retrieval_eval.airflow.alerts import AlertMessage, send_alerts
    from retrieval_eval.reports.replay import headline, reason_lines
    from retrieval_eval.store import open_store

    comparison = saved.comparison
    message = AlertMessage(
        kind=kind,
        set_identifier=saved.sample_name,
        retriever=saved.retriever,
        run_id=saved.replay_id,
        summary=headline(saved),
        # why queries failed, masked, beside the verdict's reasons
        drift_reasons=[*comparison.reasons, *reason_lines(comparison.error_reasons())],
        link=replay_page_url(job.get("ui_base_url"), saved.replay_id),
        question_count=len(saved.rankings),
        error_count=comparison.errors,
        index_version=saved.index_version,
        baseline_index_version=saved.compared_index_version,
    )
    print(message.text())
    with open_store(store_url(job)) as store:
        outcome = send_alerts(job["alerts"], message, store=store, run_key=saved.run_key)
    print(outcome)
    return outcome


@task
def alert_drift(job: dict[str, Any], saved: dict[str, Any]) -> str:
    outcome = _alert(job, "drift", _record(saved))
    if job.get("fail_on_drift") or get_current_context()["params"].get("fail_on_drift"):
        raise AirflowFailException(f"ranking drift ({outcome}); fail_on_drift is set")
    return outcome


@task
def alert_invalid_replay(job: dict[str, Any], saved: dict[str, Any]) -> str:
    record = _record(saved)
    outcome = _alert(job, "invalid_replay", record)
    comparison = record.comparison
    if comparison.state == "empty":
        raise AirflowFailException(f"{'; '.join(comparison.reasons)} ({outcome})")
    from retrieval_eval.reports.replay import reason_lines

    why = "; ".join(reason_lines(comparison.error_reasons()))
    raise AirflowFailException(
        f"the replay is invalid: {comparison.errors} of {len(record.rankings)} queries failed"
        f"{f' ({why})' if why else ''} ({outcome})"
    )


@task
def no_drift(saved: dict[str, Any]) -> str:
    from retrieval_eval.reports.replay import headline

    return headline(_record(saved)).splitlines()[0]

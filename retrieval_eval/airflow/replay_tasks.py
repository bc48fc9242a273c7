"""A replay DAG's tasks: thin Airflow wrappers over :mod:`retrieval_eval.airflow.replay_steps`.

Each takes the series' ``job`` (config path, sample, retriever, against, alert channels, ...).
The ranking-drift verdict is its own alert kind (``drift``, ``invalid_replay``), claimed once
per DAG run and channel like a labelled run's, and never mixed with a regression verdict.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import get_current_context, task
from airflow.sdk.exceptions import AirflowFailException

from retrieval_eval.airflow.runtime import bad_input_fails_at_once, dag_run_marks, store_url
from retrieval_eval.reports.links import replay_page_url


@task
def load_sample(job: dict[str, Any]) -> list[dict[str, Any]]:
    """Draw and store the sample once, fill the retrievers' caches, split into batches."""
    from retrieval_eval.airflow import replay_steps

    with bad_input_fails_at_once():
        batches = replay_steps.plan_replay(
            job["config_path"],
            job["sample"],
            job["retriever"],
            job["max_batches"],
            store_url=store_url(job),
            against=job.get("against"),
            min_batch_questions=job.get("min_batch_questions", 1),
        )
    print(f"sample {job['sample']}: {batches[-1]['stop']} queries in {len(batches)} batches")
    return batches


@task
def replay(job: dict[str, Any], batch: dict[str, Any]) -> dict[str, Any]:
    from retrieval_eval.airflow import replay_steps

    with bad_input_fails_at_once():
        return replay_steps.replay_batch(
            job["config_path"],
            job["sample"],
            job["retriever"],
            batch,
            store_url=store_url(job),
            against=job.get("against"),
        )


@task
def compare_and_save(
    job: dict[str, Any], batches: list[dict[str, Any]], planned: list[dict[str, Any]]
) -> dict[str, Any]:
    """Compare with the replay before (or the ``against`` retriever), judge, save, and log the
    verdict as one line; the index version comes from the triggering asset event's extra."""
    from retrieval_eval.airflow import replay_steps

    with bad_input_fails_at_once():
        saved = replay_steps.compare_and_save(
            job["config_path"],
            job["sample"],
            job["retriever"],
            list(batches),
            sample_id=planned[0]["sample_id"],
            fingerprint=planned[0]["fingerprint"],
            store_url=store_url(job),
            against=job.get("against"),
            **dag_run_marks(),
        )
    link = replay_page_url(job.get("ui_base_url"), saved["replay_id"])
    print(saved["headline"].replace("\n", "; ") + (f" — {link}" if link else ""))
    return saved


@task.branch
def check_drift(saved: dict[str, Any]) -> str:
    from retrieval_eval.airflow import replay_steps

    return replay_steps.choose_branch(saved)


def _alert(job: dict[str, Any], kind: str, saved: dict[str, Any]) -> str:
    from retrieval_eval.airflow.alerts import AlertMessage, send_alerts
    from retrieval_eval.reports.replay import reason_lines
    from retrieval_eval.store import open_store

    link = replay_page_url(job.get("ui_base_url"), saved["replay_id"])
    message = AlertMessage(
        kind=kind,
        set_identifier=saved["sample"],
        retriever=saved["retriever"],
        run_id=saved["replay_id"],
        summary=saved["headline"],
        # why queries failed, masked, beside the verdict's reasons
        drift_reasons=[*saved["reasons"], *reason_lines(saved.get("error_reasons", []))],
        link=link,
        question_count=saved["queries"],
        error_count=saved["errors"],
        index_version=saved.get("index_version"),
        baseline_index_version=saved.get("compared_index_version"),
    )
    print(message.text())
    with open_store(store_url(job)) as store:
        outcome = send_alerts(job["alerts"], message, store=store, run_key=saved["run_key"])
    print(outcome)
    return outcome


@task
def alert_drift(job: dict[str, Any], saved: dict[str, Any]) -> str:
    outcome = _alert(job, "drift", saved)
    if job.get("fail_on_drift") or get_current_context()["params"].get("fail_on_drift"):
        raise AirflowFailException(f"ranking drift ({outcome}); fail_on_drift is set")
    return outcome


@task
def alert_invalid_replay(job: dict[str, Any], saved: dict[str, Any]) -> str:
    outcome = _alert(job, "invalid_replay", saved)
    if saved["state"] == "empty":
        raise AirflowFailException(f"{'; '.join(saved['reasons'])} ({outcome})")
    from retrieval_eval.reports.replay import reason_lines

    why = "; ".join(reason_lines(saved.get("error_reasons", [])))
    raise AirflowFailException(
        f"the replay is invalid: {saved['errors']} of {saved['queries']} queries failed"
        f"{f' ({why})' if why else ''} ({outcome})"
    )


@task
def no_drift(saved: dict[str, Any]) -> str:
    return str(saved["headline"]).splitlines()[0]

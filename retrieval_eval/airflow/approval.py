"""The approval of an evaluation with ``approve_baseline``: a DAG of its own, so the
evaluation's DAG run ends (failed, with ``fail_on_regression``) at once, while a person decides.

The evaluation's ``request_approval`` task emits an event on the pair's approval asset
(:func:`approval_asset_uri`) naming the saved run; the approval DAG, scheduled on that asset,
asks with Airflow's human-in-the-loop :class:`ApprovalOperator` (Airflow 3.1+, standard
provider) whether that run becomes the baseline. The request's text is written at run time from
the stored run (:func:`approval_request`); Approve runs the
``accept_baseline`` task after it, Reject skips it, and no answer within the timeout is Reject
(the operator's default), so the baseline stays.

Only the factory imports this module, and only for such an evaluation, so the other DAGs parse
without the provider's operators.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from airflow.providers.standard.operators.hitl import ApprovalOperator

from retrieval_eval.airflow.lines import _gated, _rate, verdict_line, worded_verdict


def approval_asset_uri(dag_id: str) -> str:
    """The asset the evaluation DAG ``dag_id`` updates when one of its runs asks for approval."""
    return f"retrieval-eval://approval/{dag_id}"


def approval_dag_id_for(dag_id: str) -> str:
    """``retrieval_eval_approval__<set>__<retriever>`` for the evaluation DAG ``dag_id``."""
    return dag_id.replace("retrieval_eval__", "retrieval_eval_approval__", 1)


class PersonApproval(ApprovalOperator):
    """A question to a person in Browse → Required Actions (or the REST API's
    ``hitlDetails``) about the job's work: Reject, or no answer in ``timeout_s``, changes
    nothing. Each subclass writes its subject and body at run time, in ``execute``."""

    def __init__(
        self, *, task_id: str, subject: str, job: dict[str, Any], timeout_s: float, **kwargs: Any
    ) -> None:
        super().__init__(
            task_id=task_id,
            subject=subject,  # replaced at run time
            defaults=ApprovalOperator.REJECT,
            response_timeout=timedelta(seconds=timeout_s),
            **kwargs,
        )
        self.job = job
        self.timeout_s = timeout_s


class BaselineApproval(PersonApproval):
    """Asks whether the saved run the triggering asset event names becomes the baseline; the
    subject and body name the run, its figures and its page."""

    def __init__(self, *, job: dict[str, Any], timeout_s: float, **kwargs: Any) -> None:
        super().__init__(
            task_id="approve_baseline",
            subject="Accept the run as the baseline?",
            job=job,
            timeout_s=timeout_s,
            **kwargs,
        )

    def execute(self, context: Any) -> Any:
        from retrieval_eval.airflow.runtime import store_url

        url = store_url(self.job)
        run_id = approval_run_id(context.get("triggering_asset_events"))
        recorded, result = stored_for_approval(url, run_id)
        self.subject, self.body = approval_request(
            recorded, result, self.job.get("ui_base_url"), url, self.timeout_s
        )
        print(self.subject)
        return super().execute(context)


def approval_request(
    recorded: dict[str, Any],
    result: dict[str, Any],
    ui_base_url: str | None,
    store_url: str,
    timeout_s: float,
) -> tuple[str, str]:
    """The approval request's subject and Markdown body: which run of which set and retriever,
    why it asks (a regression, or changed labels), the figures before → after, the current
    baseline, the run page and what each answer does. Figures, ids and links only: no question
    text, and redacted like every other text this package writes."""
    from retrieval_eval.reports.links import run_page_url
    from retrieval_eval.safety.redaction import redact
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.baselines import latest_baseline

    run_id, verdict = recorded["run_id"], recorded["verdict"]
    pair = f"{result['set_identifier']} × {result['retriever']}"
    with open_store(store_url) as store:
        current = latest_baseline(store, result["set_identifier"], result["retriever"])
        # the verdict names the baseline it compared with; changed labels compared none
        compared_with = verdict.get("baseline_run_id")
        if compared_with is not None and (current is None or current.id != compared_with):
            current = store.runs.get(int(compared_with), questions=False)
    if verdict.get("needs_approval"):
        why = "the golden set's labels changed, so this run is not compared with earlier runs"
        if current is not None and current.result.labels_fingerprint:
            old = current.result.labels_fingerprint[:12]
            why += f" (labels {old} → {str(result.get('labels_fingerprint', ''))[:12]})"
    else:
        reasons = worded_verdict(recorded)["reasons"] or [verdict["state"]]
        why = "it regressed: " + "; ".join(reasons)
    now = verdict_line(recorded, ui_base_url, result).split("; ")[0]
    lines = [
        f"Accept run {run_id} of **{pair}** as the baseline later runs compare with?",
        "",
        f"- Why this asks: {why}.",
        f"- Run {run_id}: {now}.",
    ]
    if current is not None:
        before = ", ".join(
            f"top-{d} {_rate(current.result.model_dump(mode='json'), d)}" for d in _gated(result)
        )
        lines.append(f"- Current baseline: run {current.id}: {before}.")
    if page := run_page_url(ui_base_url, run_id):
        lines.append(f"- Run page: {page}")
    stays = f"run {current.id} stays the baseline" if current is not None else "nothing changes"
    hours = f"{timeout_s / 3600:g} h" if timeout_s >= 3600 else f"{timeout_s:g} s"
    lines += [
        "",
        f"**Approve**: run {run_id} becomes the baseline (as `retrieval-eval runs accept "
        f"{run_id}`). **Reject**, or no answer within {hours}: {stays}.",
    ]
    subject = f"Accept run {run_id} as the baseline of {pair}?"
    return redact(subject), redact("\n".join(lines))


def approval_run_id(events: Mapping[Any, Iterable[Any]] | None) -> int:
    """The stored run the approval DAG run asks about: the newest triggering asset event's
    ``run_id`` (an older one still queued is superseded by it). ValueError without one: the
    approval DAG runs only when an evaluation asks."""
    from retrieval_eval.airflow.runtime import newest_extra

    run_id = newest_extra(events, lambda extra: extra.get("run_id"))
    if run_id is None:
        raise ValueError(
            "no triggering asset event names a run: the approval DAG runs when its evaluation's "
            "request_approval task asks"
        )
    return int(run_id)


def stored_for_approval(store_url: str, run_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """What :func:`approval_request` reads of a run (its record and its result, as the
    evaluation's XComs carried them), from the store."""
    from retrieval_eval.store import open_store

    with open_store(store_url) as store:
        run = store.runs.get(run_id, questions=False)
    verdict = run.verdict.model_dump(mode="json") if run.verdict is not None else {}
    recorded = {"run_id": run.id, "saved": True, "verdict": verdict}
    return recorded, run.result.model_dump(mode="json")


def accept_run(store_url: str, run_id: int) -> str:
    """An approved request: accept the run as ``retrieval-eval runs accept`` does."""
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.baselines import accept_baseline

    with open_store(store_url) as store:
        return accept_baseline(store, run_id)

"""A recorded run's verdict as one small JSON document, for the DAG that acts on it.

The task that records a run (``persist``) writes it twice: as the ``extra`` of the evaluation's
outlet asset event (:func:`evaluation_asset_uri`, ``retrieval-eval://<set>/<retriever>``), which
a promotion DAG scheduled on that asset reads from ``triggering_asset_events``
(:func:`outcome_from_events`); and as its ``outcome`` XCom, which
:func:`retrieval_eval.airflow.group.evaluate_retrieval` returns and
:func:`retrieval_eval.airflow.gate.retrieval_gate` reads. One model (:class:`Outcome`), so the
gate, the promotion DAG and the docs agree on its keys.

Figures, ids and links only: no question text, no store URL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import quote

from pydantic import BaseModel, ConfigDict

ASSET_SCHEME = "retrieval-eval"
# the verdict states that stop a promotion: the index got worse, or the run cannot tell
BLOCKING_STATES = ("regression", "invalid_run")


def evaluation_asset_uri(set_identifier: str, retriever: str) -> str:
    """``retrieval-eval://<set>/<retriever>``: the asset an evaluation's recorded run updates.

    Each part is percent-encoded (a set identifier is already URI-safe; a retriever's config key
    need not be), so the URI names one pair only. The approval DAGs' assets
    (``retrieval-eval://approval/<dag id>``) never clash: a DAG id is not a retriever's name
    with a ``retrieval_eval__`` prefix unless someone names one so.
    """
    return f"{ASSET_SCHEME}://{quote(set_identifier, safe='')}/{quote(retriever, safe='')}"


class Outcome(BaseModel):
    """The verdict of one recorded run, as the outlet event's ``extra`` and the ``outcome`` XCom.

    ``passed`` is what a gate acts on: False for a ``regression`` or an ``invalid_run``, True
    otherwise (a first run, ``baseline``, has nothing to regress from; ``not_comparable``, under
    changed labels, has no comparable baseline). ``hit_rates`` holds the rate at every gated depth
    (``{"1": 0.69, "3": 0.87}``), ``baseline_hit_rates`` the compared run's when there was one.
    """

    model_config = ConfigDict(extra="ignore")

    state: str
    passed: bool
    set: str
    retriever: str
    run_id: int | None
    run_key: str
    index_version: str | None = None
    set_fingerprint: str
    hit_rates: dict[str, float | None]
    baseline_run_id: int | None = None
    baseline_hit_rates: dict[str, float | None] = {}
    summary: str = ""
    reasons: list[str] = []
    run_page: str | None = None


def outcome_of(
    result: Mapping[str, Any], recorded: Mapping[str, Any], run_page: str | None = None
) -> dict[str, Any]:
    """The :class:`Outcome` (as JSON) of a run as the persist task holds it: the run's result
    and what was recorded (both JSON, as their XComs carry them)."""
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.reports.verdict import verdict_document
    from retrieval_eval.verdicts.models import Verdict

    run = RunResult.model_validate(result)
    verdict = Verdict.model_validate(recorded["verdict"])
    worded = verdict_document(verdict)  # stored as data: worded here, for people reading it
    state = verdict.state
    baseline_rates: dict[str, float | None] = {
        str(d): change.baseline
        for d, change in verdict.changes().items()
        if change.baseline is not None
    }
    return Outcome(
        state=state,
        passed=state not in BLOCKING_STATES,
        set=run.set_identifier,
        retriever=run.retriever,
        run_id=recorded.get("run_id"),
        run_key=run.run_key,
        index_version=run.index_version,
        set_fingerprint=run.labels_fingerprint,
        hit_rates={str(d): run.hit_rate(d) for d in run.depths},
        baseline_run_id=verdict.baseline_run_id,
        baseline_hit_rates=baseline_rates,
        summary=str(worded["summary"]),
        reasons=list(worded["reasons"]),  # type: ignore[call-overload]
        run_page=run_page,
    ).model_dump(mode="json")


def outcome_from_events(events: Mapping[Any, Iterable[Any]] | None) -> Outcome:
    """The newest triggering asset event's outcome, for a DAG scheduled on an evaluation's asset
    (Airflow 3's ``triggering_asset_events``: an asset's events, oldest first). ValueError when
    no event carries one: the DAG was started by hand, or by an asset no evaluation updates."""
    from retrieval_eval.airflow.runtime import newest_extra

    found = newest_extra(events, lambda extra: extra if "passed" in extra else None)
    if found is None:
        raise ValueError(
            "no triggering asset event carries a retrieval-eval verdict: schedule this DAG on "
            "an evaluation's asset (retrieval-eval://<set>/<retriever>), and let that "
            "evaluation's run start it"
        )
    return Outcome.model_validate(found)


def announce(
    workflow: str, job: Mapping[str, Any], record: Mapping[str, Any], context: Mapping[str, Any]
) -> None:
    """After a labelled run's record task: its :class:`Outcome` as the task's ``outcome`` XCom
    (what ``evaluate_retrieval`` returns) and, when the job names its outlet asset, as that
    asset event's ``extra``. Other workflows announce nothing (yet)."""
    if workflow != "labelled_run":
        return
    from airflow.sdk import Asset

    from retrieval_eval.airflow.links import dashboard_url
    from retrieval_eval.reports.links import run_page_url

    page = run_page_url(dashboard_url(job.get("ui_base_url")), record.get("run_id"))
    outcome = outcome_of(record["result"], record, page)
    context["ti"].xcom_push(key="outcome", value=outcome)
    if job.get("outlet"):
        context["outlet_events"][Asset(str(job["outlet"]))].extra = outcome

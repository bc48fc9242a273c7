"""The work each DAG task does, as plain functions over JSON-able values.

Each calls the steps of :mod:`retrieval_eval.workflows.labelled_run`, the pipeline the CLI's ``run``
chains in one process; here the retrieval fans out per batch. The factory only wires these into
tasks, so every step is testable without a scheduler and the payloads between tasks stay small:
batches travel as index ranges, not questions, and each mapped task re-reads the (validated)
set and checks its fingerprint did not change under the run.
The modules behind each step are imported by the step itself: a task process imports what its
own step needs (the branch decision needs no pandas).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from retrieval_eval.config.models import load_config
from retrieval_eval.errors import InvalidInputError

# Airflow refuses to map more items than [core] max_map_length (1024 by default)
MAX_MAP_LENGTH = 1024

BRANCH_REGRESSION = "alert_regression"
BRANCH_INVALID = "alert_invalid_run"
BRANCH_OK = "no_regression"
BRANCH_BASELINE = "baseline"
BRANCH_LABELS = "alert_labels"
BRANCH_APPROVE = "request_approval"  # approve_baseline: the approval DAG asks (approval.py)
LINT_FINDINGS_KEPT = 50  # findings stored with the run; the counts cover all of them
INDEX_VERSION_KEYS = ("index_version", "version", "build")


class LintFailed(InvalidInputError):
    """``lint: fail`` and the lint task found errors: the DAG run fails at once."""


def batch_count(questions: int, max_batches: int, min_batch_questions: int = 1) -> int:
    """How many batches a set of ``questions`` gets: one per ``min_batch_questions`` (rounded
    up), at least 1, at most ``max_batches`` (a ceiling), the question count and Airflow's
    :data:`MAX_MAP_LENGTH`. Each batch is a task paying its own start-up, so a small set gets
    few batches."""
    wanted = math.ceil(questions / min_batch_questions)
    return max(1, min(wanted, max_batches, questions, MAX_MAP_LENGTH))


def index_version(events: Mapping[Any, Iterable[Any]] | None) -> str | None:
    """The index build that started this run: the newest triggering asset event's ``extra``
    (``index_version``, else ``version`` or ``build``), as
    :func:`~retrieval_eval.evaluation.results.index_version_text` keeps it; None for a
    scheduled or manual run (Airflow 3's ``triggering_asset_events`` is then empty), or when no
    event's extra names one. Labelled runs and replays read it the same way."""
    from retrieval_eval.evaluation.results import index_version_text

    def version(extra: Mapping[str, Any]) -> str | None:
        found = (index_version_text(extra.get(key)) for key in INDEX_VERSION_KEYS)
        return next((v for v in found if v is not None), None)

    return newest_extra(events, version)


def newest_extra(
    events: Mapping[Any, Iterable[Any]] | None, read: Callable[[Mapping[str, Any]], Any]
) -> Any:
    """What ``read`` finds in the newest triggering asset event's ``extra`` among the events
    where it finds something (not None); None if it finds nothing in any."""
    newest: tuple[Any, Any] | None = None
    for asset_events in (events or {}).values():
        for event in asset_events:
            value = read(getattr(event, "extra", None) or {})
            if value is None:
                continue
            stamp = getattr(event, "timestamp", None)
            if newest is None or (stamp is not None and (newest[0] is None or stamp >= newest[0])):
                newest = (stamp, value)
    return newest[1] if newest else None


def manual_overrides(params: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A manual run's Params as the pipeline's overrides: ``{"run": {"depths": ..., "relevance_level": ...},
    "thresholds": {"max_top1_drop": ..., "max_top5_drop": ...}}`` (None: not given).

    ``depths`` is checked as ``run.depths`` is; ``max_drops`` maps a depth (``"5"``, as JSON
    keys are strings) to its largest allowed drop, 0 to 1. A bad value raises
    InvalidInputError naming the Param and the fix, so the run fails before any retrieval (the
    load task checks them; a threshold for a depth the run does not gate fails there too).
    """
    from retrieval_eval.evaluation import MAX_DEPTH
    from retrieval_eval.evaluation.results import checked_depths

    depths = params.get("depths")
    if depths is not None:
        try:
            if not isinstance(depths, list):
                raise ValueError(f"expected a list of depths such as [1, 5], got {depths!r}")
            depths = checked_depths(depths)
        except ValueError as exc:
            raise InvalidInputError(f"Param depths: {exc}") from None
    drops: dict[str, Any] = {
        "max_top1_drop": params.get("max_top1_drop"),
        "max_top3_drop": params.get("max_top3_drop"),
    }
    given = params.get("max_drops") or {}
    if not isinstance(given, Mapping):
        raise InvalidInputError(
            f'Param max_drops: expected a mapping of depth to drop such as {{"5": 0.05}}, '
            f"got {given!r}"
        )
    for key, drop in given.items():
        depth = int(key) if str(key).isdigit() else None
        if depth is None or not 1 <= depth <= MAX_DEPTH:
            raise InvalidInputError(
                f"Param max_drops: {key!r} is not a depth; keys are whole numbers from 1 to "
                f'{MAX_DEPTH}, e.g. {{"5": 0.05}}'
            )
        if isinstance(drop, bool) or not isinstance(drop, int | float) or not 0 <= drop <= 1:
            raise InvalidInputError(
                f"Param max_drops: depth {depth}'s drop must be between 0 and 1 (an absolute "
                f"rate drop, 0.10 = ten points), got {drop!r}"
            )
        name = f"max_top{depth}_drop"
        if drops.get(name) is not None and drops[name] != drop:
            raise InvalidInputError(
                f"Param max_drops gives depth {depth} {drop!r} and Param {name} gives "
                f"{drops[name]!r}; give it once"
            )
        drops[name] = float(drop)
    level = params.get("relevance_level")
    if level is not None and (isinstance(level, bool) or level not in (1, 2, 3)):
        raise InvalidInputError(
            f"Param relevance_level: expected 1, 2 or 3 (the grade a target needs), got {level!r}"
        )
    return {"run": {"depths": depths, "relevance_level": level}, "thresholds": drops}


def plan_batches(
    config_path: str | None,
    set_name: str,
    max_batches: int,
    *,
    retriever_name: str | None = None,
    check_store: Callable[[], object] | None = None,
    min_batch_questions: int = 1,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Validate the set and split it into contiguous index ranges, as many as
    :func:`batch_count` says.

    Each batch carries the set's labels fingerprint, which the mapped task checks. With
    ``retriever_name``, every option is checked as the CLI's ``run`` checks it (the settings,
    the thresholds, the store through ``check_store``, the retriever's name and options), then the
    retriever's ``prepare`` hook runs (the lexical index is built into the adapter cache once
    here, not once per batch). ``overrides`` (:func:`manual_overrides`) are checked with them.
    """
    from retrieval_eval.workflows.labelled_run import resolve_run, resolve_set

    config = load_config(config_path)
    given = overrides or {}
    if retriever_name is None:
        golden = resolve_set(config, set_name)
    else:
        golden = resolve_run(
            config,
            set_name,
            retriever_name,
            run=given.get("run"),
            thresholds=given.get("thresholds"),
            check_store=check_store,
        ).golden_set
        config.retriever_registry.prepare(retriever_name)
    count = len(golden.questions)
    size = math.ceil(count / batch_count(count, max_batches, min_batch_questions))
    return [
        {"start": i, "stop": min(i + size, count), "fingerprint": golden.fingerprint}
        for i in range(0, count, size)
    ]


def lint_set(
    config_path: str | None, set_name: str, retriever_name: str, mode: str
) -> dict[str, Any]:
    """The lint task: dead labels (one ``existing_ids`` call) and, when the :mod:`retrieval_eval.lint`
    package offers ``run_lint``, its other checks; JSON for the score task and the alert.

    Returns ``{"mode", "dead_labels": DeadLabels JSON, "errors", "warnings", "findings": [...]}``
    (at most :data:`LINT_FINDINGS_KEPT` findings). With ``mode == "fail"`` and any error (a dead
    label is one) it raises :class:`LintFailed` instead, naming what was found. A lookup that
    fails is recorded (``checked: false``) and is not an error: the evaluation goes on.
    """
    from retrieval_eval.evaluation.labels import dead_labels_or_failure
    from retrieval_eval.workflows.labelled_run import opened_retriever, resolve_set

    config = load_config(config_path)
    golden = resolve_set(config, set_name)
    with opened_retriever(config, retriever_name) as retriever:
        labels = dead_labels_or_failure(golden, retriever)
        findings = _lint_findings(golden, retriever, config, retriever_name, labels)
    errors = sum(1 for f in findings if f.get("severity") == "error")
    if labels.dead_ids and not any(f.get("check") == "dead_labels" for f in findings):
        errors += len(labels.stale_questions) + len(labels.partly_dead)
    outcome = {
        "mode": mode,
        "dead_labels": labels.model_dump(),
        "errors": errors,
        "warnings": sum(1 for f in findings if f.get("severity") == "warning"),
        "findings": findings[:LINT_FINDINGS_KEPT],
    }
    if mode == "fail" and errors:
        from collections import Counter

        checks = Counter(f.get("check") for f in findings if f.get("severity") == "error")
        by_check = ", ".join(f"{check}: {n}" for check, n in sorted(checks.items()))
        raise LintFailed(
            f"lint: fail, and the golden set {golden.identifier!r} has {errors} error finding"
            f"{'s' if errors != 1 else ''} ({by_check or 'dead_labels'}); {labels.summary()}"
        )
    return outcome


def _lint_findings(
    golden: Any, retriever: Any, config: Any, retriever_name: str, labels: Any
) -> list[dict[str, Any]]:
    """The lint package's findings for the set and retriever. No store: this runs before the
    evaluation, and it must not depend on the store being up. A check that raises becomes one
    warning finding: lint advises, it never keeps an evaluation from running. ``labels`` (the
    dead-label check already made) is reused, so the adapter's ``existing_ids`` is asked once.
    The power figures are at the depths the run will gate (the evaluation's ``run.depths``,
    else the config's), as ``sets lint --retriever`` has them: without a store or a run,
    run_lint would take top-1 and top-3."""
    from retrieval_eval.lint import run_lint
    from retrieval_eval.safety.redaction import redact

    thresholds = config.section_for(golden.identifier, retriever_name, "thresholds")
    depths = config.section_for(golden.identifier, retriever_name, "run").depths
    try:
        report = run_lint(
            golden,
            retriever=retriever,
            options=config.lint,
            thresholds=thresholds,
            dead_labels=labels,
            depths=depths,
        )
    except Exception as exc:
        message = redact(f"lint could not run: {type(exc).__name__}: {exc}")[:300]
        return [{"check": "lint", "severity": "warning", "message": message}]
    return [f.model_dump(mode="json") for f in report.findings]


def retrieve_batch(
    config_path: str | None,
    set_name: str,
    retriever_name: str,
    fingerprint: str,
    start: int,
    stop: int,
    overrides: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score questions ``[start, stop)`` with the retriever's bounded concurrency.

    Returns ``{"retriever": <its identifier>, "questions": [QuestionResult JSON, ...]}``.
    """
    from retrieval_eval.evaluation.scoring import score_questions
    from retrieval_eval.workflows.labelled_run import (
        opened_retriever,
        resolve_set,
        resolve_settings,
    )

    config = load_config(config_path)
    golden = resolve_set(config, set_name)
    if golden.fingerprint != fingerprint:
        raise InvalidInputError(
            f"golden set {golden.identifier!r} changed while the run was in progress "
            "(labels fingerprint differs); trigger the DAG again"
        )
    settings = resolve_settings(config, golden.identifier, retriever_name, **(overrides or {}))
    with opened_retriever(config, retriever_name) as retriever:
        results = score_questions(golden.questions[start:stop], retriever, settings)
    return {
        "retriever": retriever.identifier,
        "questions": [r.model_dump(mode="json") for r in results],
    }


def reduce_results(
    config_path: str | None,
    set_name: str,
    retriever_name: str,
    batch_results: list[dict[str, Any]],
    *,
    run_key: str,
    started_at: datetime | None = None,
    overrides: dict[str, Any] | None = None,
    lint: dict[str, Any] | None = None,
    index_version: str | None = None,
) -> dict[str, Any]:
    """Aggregate every batch into one RunResult (as JSON); ``lint`` (the lint task's output)
    gives the run its ``dead_labels`` and its stored ``lint`` findings, ``index_version``
    (:func:`index_version` of the triggering asset events) the index build it measured."""
    from retrieval_eval.evaluation.results import QuestionResult
    from retrieval_eval.evaluation.scoring import summarise_set
    from retrieval_eval.workflows.labelled_run import resolve_set, resolve_settings

    config = load_config(config_path)
    golden = resolve_set(config, set_name)
    questions = [
        QuestionResult.model_validate(q) for batch in batch_results for q in batch["questions"]
    ]
    if len(questions) != len(golden.questions):
        raise InvalidInputError(
            f"expected {len(golden.questions)} question results, got {len(questions)}"
        )
    retriever_id = batch_results[0]["retriever"] if batch_results else retriever_name
    result = summarise_set(
        golden,
        questions,
        retriever=retriever_id,
        settings=resolve_settings(config, golden.identifier, retriever_name, **(overrides or {})),
        started_at=started_at,
        run_key=run_key,
    )
    if index_version is not None:
        result = result.model_copy(update={"index_version": index_version})
    if lint:
        from retrieval_eval.evaluation.labels import DeadLabels

        labels = lint.get("dead_labels")
        result = result.model_copy(
            update={
                "dead_labels": DeadLabels.model_validate(labels) if labels else None,
                "lint": {k: v for k, v in lint.items() if k != "dead_labels"},
            }
        )
    return result.model_dump(mode="json")


def persist_result(
    config_path: str | None,
    result_json: dict[str, Any],
    *,
    store_url: str,
    baseline_run_id: int | None = None,
    threshold_overrides: dict[str, Any] | None = None,
    approve_baseline: bool = False,
) -> dict[str, Any]:
    """Save the run with its verdict (idempotent on the run key) and return what was recorded;
    with ``approve_baseline`` a run under changed labels waits for approval to be a baseline.

    An unreachable store raises after the run was spooled, so the task retries with backoff
    and, if it never succeeds, ``retrieval-eval db flush`` saves the spooled run later (the
    error says where the run went when the spool folder could not take it either).
    """
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.reports.verdict import verdict_document
    from retrieval_eval.workflows.labelled_run import record_verdict, resolve_thresholds

    config = load_config(config_path)
    result = RunResult.model_validate(result_json)
    thresholds = resolve_thresholds(
        config, result.set_identifier, result.retriever, **(threshold_overrides or {})
    )
    recorded = record_verdict(
        result,
        thresholds,
        store_url=store_url,
        baseline_run_id=baseline_run_id,
        dead_labels_baseline=config.dead_labels_baseline_for(
            result.set_identifier, result.retriever
        ),
        approve_labels_change=approve_baseline,
    )
    failure = recorded.failure()
    if failure is not None:
        raise failure
    # the XCom carries the verdict as the JSON contract has it: its figures and its words
    return {**recorded.model_dump(mode="json"), "verdict": verdict_document(recorded.verdict)}


def choose_branch(recorded: dict[str, Any]) -> str:
    state = recorded["verdict"]["state"]
    if state == "invalid_run":
        return BRANCH_INVALID
    if state == "regression":
        return BRANCH_REGRESSION
    if state == "baseline":
        return BRANCH_BASELINE
    return BRANCH_OK


def choose_branches(recorded: dict[str, Any], approve_baseline: bool = False) -> list[str]:
    """The verdict's branch, plus :data:`BRANCH_LABELS` when the verdict names dead ids: labels
    that need attention alert on their own branch, never as (or instead of) a regression; plus,
    with ``approve_baseline``, :data:`BRANCH_APPROVE` for a saved run a person may accept as the
    baseline (a regression, or a run under changed labels)."""
    branches = [choose_branch(recorded)]
    if recorded["verdict"].get("dead_ids"):
        branches.append(BRANCH_LABELS)
    if approve_baseline and recorded.get("run_id") is not None and _approvable(recorded):
        branches.append(BRANCH_APPROVE)
    return branches


def _approvable(recorded: dict[str, Any]) -> bool:
    verdict = recorded["verdict"]
    return bool(verdict.get("needs_approval")) or verdict["state"] == "regression"


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
            current = store.get_run(int(compared_with), questions=False)
    if verdict.get("needs_approval"):
        why = "the golden set's labels changed, so this run is not compared with earlier runs"
        if current is not None and current.result.labels_fingerprint:
            old = current.result.labels_fingerprint[:12]
            why += f" (labels {old} → {str(result.get('labels_fingerprint', ''))[:12]})"
    else:
        why = "it regressed: " + "; ".join(verdict.get("reasons") or [verdict["state"]])
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
    from retrieval_eval.reports.verdict import verdict_document
    from retrieval_eval.store import open_store

    with open_store(store_url) as store:
        run = store.get_run(run_id, questions=False)
    verdict = verdict_document(run.verdict) if run.verdict is not None else {}
    recorded = {"run_id": run.id, "saved": True, "verdict": verdict}
    return recorded, run.result.model_dump(mode="json")


def accept_run(store_url: str, run_id: int) -> str:
    """An approved request: accept the run as ``retrieval-eval runs accept`` does."""
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.baselines import accept_baseline

    with open_store(store_url) as store:
        return accept_baseline(store, run_id)


def _gated(result: dict[str, Any]) -> list[int]:
    """The gated depths of a result as its XCom carries it (top-1 and top-3 unless it says)."""
    return list((result.get("settings") or {}).get("depths") or (1, 3))


def _rate(result: dict[str, Any], depth: int) -> str:
    from retrieval_eval.formats.numbers import pct

    at = result.get("hits_at") or {}  # JSON: the depths are strings
    hits = at.get(str(depth), at.get(depth, result.get(f"top{depth}_hits")))
    count = result.get("question_count")
    counts = f" ({hits}/{count})" if hits is not None and count is not None else ""
    rate = hits / count if hits is not None and count else None
    return f"{pct(rate)}{counts}"


def score_line(result: dict[str, Any]) -> str:
    """The score task's log line: ``scored 46 questions of S × R (index V): top-1 68.8%
    (32/46), top-3 ...``, at every gated depth; the index part only when an asset event named
    the build."""
    index = f" (index {result['index_version']})" if result.get("index_version") else ""
    rates = ", ".join(f"top-{d} {_rate(result, d)}" for d in _gated(result))
    return (
        f"scored {result['question_count']} questions of {result['set_identifier']} × "
        f"{result['retriever']}{index}: {rates}; {result.get('error_count', 0)} errors"
    )


def verdict_line(
    recorded: dict[str, Any],
    ui_base_url: str | None = None,
    result: dict[str, Any] | None = None,
) -> str:
    """One line people read in the persist and check_regression logs: the rate at every gated
    depth (before → after when compared), the verdict and the run's link, e.g. ``top-1 68.8% →
    12.5% (−56.3 pts), top-3 ...; regression; run 12: http://.../runs/12``. ``result`` gives the
    rates of a run with nothing to compare with."""
    from retrieval_eval.formats.numbers import pct, pts
    from retrieval_eval.reports.links import run_page_url

    verdict = recorded.get("verdict") or {}
    # the verdict's depths (JSON: string keys); one stored before them has top-1 and top-3
    changes = {int(d): c for d, c in (verdict.get("by_depth") or {}).items()}
    if not changes:
        changes = {
            d: {key: verdict.get(f"top{d}_{key}") for key in ("baseline", "current", "delta")}
            for d in (_gated(result) if result is not None else (1, 3))
        }
    parts = []
    for depth, change in changes.items():
        before, now, delta = change.get("baseline"), change.get("current"), change.get("delta")
        if before is not None and now is not None and delta is not None:
            parts.append(f"top-{depth} {pct(before)} → {pct(now)} ({pts(delta)})")
        elif result is not None:
            parts.append(f"top-{depth} {_rate(result, depth)}")
    state = str(verdict.get("state", "no verdict")).replace("_", " ")
    if verdict.get("needs_approval"):
        state += " (not the baseline until approved)"
    elif verdict.get("baseline_refused"):
        state += " (not accepted as the baseline: dead labels)"
    dead = len(verdict.get("dead_ids") or [])
    if dead:
        state += f"; labels need attention: {dead} id{'s' if dead != 1 else ''} no longer found"
    run_id = recorded.get("run_id")
    where = "run not saved" if run_id is None else f"run {run_id}"
    link = run_page_url(ui_base_url, run_id)
    if link:
        where += f": {link}"
    return "; ".join([", ".join(parts), state, where] if parts else [state, where])

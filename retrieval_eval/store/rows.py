"""Mapping a RunResult (and its verdict) to table rows and back.

Edge cases: datetimes are stored in UTC; SQLite hands them back without a zone, so a naive value
read back is taken as UTC. Slices and questions keep their order through a ``position`` column.
An invalid run read back names no baseline (neither the run nor its verdict), even when it was
stored before invalid runs stopped naming one (:func:`~retrieval_eval.store.names.compared_baseline`).
:func:`stored_run` validates what it reads: an integer in a float column, a form spelled
``GAP``, a verdict stored with a field since removed is fine (unknown keys are dropped). A row
without ``top3_hits`` in its details (written by another tool) counts them from its questions,
or from its top-3 rate when they were not read. Hits at every gated depth are in
``eval_result_depth`` (:func:`depth_rows`); a run stored before that table gated top-1 and top-3,
read from the seed's columns.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Connection, insert

from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.evaluation.results import (
    Latency,
    QuestionResult,
    RunResult,
    RunSettings,
    SliceRates,
    question_outcome,
)
from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.names import GRADER, compared_baseline
from retrieval_eval.verdicts.models import Verdict

DIMENSIONS = ("form", "hard_class")


def utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def result_row(result: RunResult, verdict: Verdict | None) -> dict[str, Any]:
    details = {
        "set_name": result.set_name,
        "finished_at": utc(result.finished_at).isoformat(),
        "top3_hits": result.top3_hits,
        "settings": result.settings.model_dump(mode="json"),
        "metrics": result.metrics,
        "by_form": {k: {**v.model_dump(), **v.intervals()} for k, v in result.by_form.items()},
        "by_hard_class": {
            k: {**v.model_dump(), **v.intervals()} for k, v in result.by_hard_class.items()
        },
        "verdict": verdict.model_dump(mode="json") if verdict is not None else None,
        # the dead-label check (retrieval_eval.evaluation.labels), or null: a baseline's stale questions
        # are left out of later comparisons with it
        "dead_labels": result.dead_labels.model_dump() if result.dead_labels else None,
        "lint": result.lint,  # the DAG lint task's findings, or null
        # a re-judged run's origin and what it could not judge again (sets rejudge), or null
        "rejudged": result.rejudged.model_dump() if result.rejudged else None,
        # the forms and hard classes of its questions in the set's order: the run page's filter
        # choices, without reading every question row (store/questions.py)
        "forms": list(dict.fromkeys(q.form.value for q in result.questions)),
        "hard_classes": list(dict.fromkeys(q.hard_class for q in result.questions if q.hard_class)),
        # 95 % Wilson intervals, [low, high] or null, as in the JSON report: the dashboard can
        # draw a band without recomputing them (a run read back derives them from its counts)
        **result.intervals(),
    }
    return {
        "set_identifier": result.set_identifier,
        "model_id": result.retriever,
        "grader": GRADER,
        "prompt_count": result.question_count,
        "passed_count": result.top1_hits,
        "pass_rate": result.top1_hit_rate,
        "mean_score": result.top3_hit_rate,
        "details": details,
        "run_date": utc(result.started_at),
        "created_at": datetime.now(UTC),
        "run_key": result.run_key,
        "status": "valid" if result.valid else "invalid",
        "labels_fingerprint": result.labels_fingerprint,
        "corpus_revision": result.corpus_revision,
        "index_version": result.index_version,
        "package_version": result.package_version,
        "set_version": result.set_version,
        "rejudged_from": result.rejudged.from_run_id if result.rejudged else None,
        "error_count": result.error_count,
        "latency_p50_ms": result.latency_ms.p50,
        "latency_p95_ms": result.latency_ms.p95,
        "verdict_state": verdict.state if verdict is not None else None,
        "is_regression": verdict.is_regression if verdict is not None else False,
        "accepted_baseline": False,
        "baseline_run_id": verdict.baseline_run_id if verdict is not None else None,
    }


def question_rows(result: RunResult, run_id: int) -> list[dict[str, Any]]:
    return [
        {
            "run_id": run_id,
            "position": position,
            "question_id": q.id,
            "question": q.question,
            "form": q.form.value,
            "hard_class": q.hard_class,
            "expected_document_ids": list(q.expected_document_ids),
            "grades": q.grades,
            **question_outcome(q),
        }
        for position, q in enumerate(result.questions)
    ]


def slice_rows(result: RunResult, run_id: int) -> list[dict[str, Any]]:
    rows = []
    for dimension, slices in (("form", result.by_form), ("hard_class", result.by_hard_class)):
        for position, (value, s) in enumerate(slices.items()):
            rows.append(
                {
                    "run_id": run_id,
                    "position": position,
                    "dimension": dimension,
                    "value": value,
                    "question_count": s.questions,
                    "top1_hits": s.top1_hits,
                    "top3_hits": s.top3_hits,
                    "top1_rate": s.top1_hit_rate,
                    "top3_rate": s.top3_hit_rate,
                }
            )
    return rows


def depth_rows(result: RunResult, run_id: int) -> list[dict[str, Any]]:
    """Hits at every gated depth: the whole run (``overall``) and each slice."""
    scopes: list[tuple[str, str, Any]] = [("overall", "", result)]
    for dimension, slices in (("form", result.by_form), ("hard_class", result.by_hard_class)):
        scopes += [(dimension, value, s) for value, s in slices.items()]
    return [
        {
            "run_id": run_id,
            "dimension": dimension,
            "value": value,
            "depth": depth,
            "hits": figures.hits(depth),
            "question_count": figures.counted(),
        }
        for dimension, value, figures in scopes
        for depth in result.depths
    ]


def question_result(row: Mapping[str, Any]) -> QuestionResult:
    """A question read back from its ``eval_result_question`` row."""
    return QuestionResult.model_validate(
        {
            "id": row["question_id"],
            "question": row["question"],
            "form": row["form"],
            "hard_class": row["hard_class"],
            "expected_document_ids": row["expected_document_ids"],
            "grades": row.get("grades"),
            "top1_hit": row["top1_hit"],
            "top3_hit": row["top3_hit"],
            "first_hit_rank": row["first_hit_rank"],
            "retrieved": row["retrieved"],
            "latency_ms": row["latency_ms"],
            "error": row["error"],
        },
    )


def _hits_at(
    stored: Mapping[tuple[str, str], dict[int, int]],
    scope: tuple[str, str],
    depths: Sequence[int],
    top1: int,
    top3: int,
) -> dict[int, int]:
    """A scope's hits at the gated depths: its eval_result_depth rows, else (a run stored
    before them, which gated top-1 and top-3) the seed's two columns."""
    found = stored.get(scope)
    if found:
        return {d: found[d] for d in depths if d in found}
    return {d: hits for d, hits in ((1, top1), (3, top3)) if d in depths}


def _by_scope(rows: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], dict[int, int]]:
    scopes: dict[tuple[str, str], dict[int, int]] = {}
    for r in sorted(rows, key=lambda r: r["depth"]):
        scopes.setdefault((r["dimension"], r["value"]), {})[r["depth"]] = r["hits"]
    return scopes


def _slices(
    rows: Sequence[Mapping[str, Any]],
    dimension: str,
    depths: Sequence[int],
    stored: Mapping[tuple[str, str], dict[int, int]],
) -> dict[str, SliceRates]:
    chosen = sorted((r for r in rows if r["dimension"] == dimension), key=lambda r: r["position"])
    return {
        r["value"]: SliceRates.model_validate(
            {
                "questions": r["question_count"],
                "top1_hits": r["top1_hits"],
                "top3_hits": r["top3_hits"],
                "top1_hit_rate": r["top1_rate"],
                "top3_hit_rate": r["top3_rate"],
                "hits_at": _hits_at(
                    stored, (dimension, r["value"]), depths, r["top1_hits"], r["top3_hits"]
                ),
            },
        )
        for r in chosen
    }


def stored_run(
    row: Mapping[str, Any],
    questions: Sequence[Mapping[str, Any]],
    slices: Sequence[Mapping[str, Any]],
    depths_rows: Sequence[Mapping[str, Any]] = (),
) -> StoredRun:
    """Rebuild a StoredRun from its eval_result row and its question, slice and depth rows."""
    details = row["details"] or {}
    verdict = details.get("verdict")
    baseline_run_id = compared_baseline(row["status"], row["baseline_run_id"])
    if verdict and row["status"] != "valid":  # never compared: its verdict names no baseline
        verdict = {**verdict, "baseline_run_id": None}
    labels = details.get("dead_labels")  # absent from runs stored before the check existed
    rejudged = details.get("rejudged")  # a re-judged run's origin (kept if that run is pruned)
    ordered = sorted(questions, key=lambda r: r["position"])
    top3_hits = details.get("top3_hits")  # absent from rows other tools wrote: counted, or
    if top3_hits is None:  # from the rate when the questions were not read
        rate = row["mean_score"] or 0.0
        top3_hits = (
            sum(1 for q in ordered if q["top3_hit"])
            if ordered
            else round(rate * row["prompt_count"])
        )
    settings = RunSettings.model_validate(details.get("settings") or {})
    depths = settings.depths
    stored = _by_scope(depths_rows)
    result = RunResult.model_validate(
        {
            "run_key": row["run_key"] or f"eval_result:{row['id']}",
            "set_identifier": row["set_identifier"],
            "set_name": details.get("set_name", ""),
            "corpus_revision": row["corpus_revision"],
            "labels_fingerprint": row["labels_fingerprint"] or "",
            "retriever": row["model_id"],
            "started_at": utc(row["run_date"]),
            "finished_at": details.get("finished_at") or utc(row["run_date"]),
            "settings": settings,
            "question_count": row["prompt_count"],
            "top1_hits": row["passed_count"],
            "top3_hits": top3_hits,
            "top1_hit_rate": row["pass_rate"],
            "top3_hit_rate": row["mean_score"],
            "hits_at": _hits_at(stored, ("overall", ""), depths, row["passed_count"], top3_hits),
            "error_count": row["error_count"],
            "valid": row["status"] == "valid",
            "by_form": _slices(slices, "form", depths, stored),
            "by_hard_class": _slices(slices, "hard_class", depths, stored),
            "latency_ms": Latency.model_validate(
                {"p50": row["latency_p50_ms"], "p95": row["latency_p95_ms"]}
            ),
            "metrics": details.get("metrics") or {},
            "questions": [question_result(q) for q in ordered],
            "dead_labels": DeadLabels.model_validate(labels) if labels else None,
            "lint": details.get("lint"),
            # absent from rows of other graders' tools and of stores before revision 0004
            "index_version": row.get("index_version"),
            "package_version": row.get("package_version"),
            "set_version": row.get("set_version"),
            "rejudged": rejudged,
        },
    )
    return StoredRun.model_validate(
        {
            "id": row["id"],
            "grader": row["grader"],
            "status": row["status"],
            "verdict_state": row["verdict_state"],
            "is_regression": row["is_regression"],
            "accepted_baseline": row["accepted_baseline"],
            "run_date": utc(row["run_date"]),
            "created_at": utc(row["created_at"]),
            "baseline_run_id": baseline_run_id,
            "verdict": Verdict.model_validate(verdict) if verdict else None,
            "result": result,
            "forms": details.get("forms"),
            "hard_classes": details.get("hard_classes"),
        },
    )


def inserted_id(conn: Connection, table: Any, values: Mapping[str, Any]) -> int:
    """Insert one row of ``values`` into ``table`` (on the caller's transaction) and return the
    id the database gave it: how every table with an ``id`` key is written."""
    return int(conn.execute(insert(table).values(**values).returning(table.c.id)).scalar_one())

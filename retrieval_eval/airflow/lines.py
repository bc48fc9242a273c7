"""The one line a person reads in a task's log, instead of its (large) return value.

A task whose XCom is a whole run keeps it out of its log (``show_return_value_in_logs=False``)
and prints one line of figures and a link: :func:`score_line` after the reduce step,
:func:`verdict_line` after the record step and the branch; for a replay, :func:`sample_line`
after the plan step and :func:`replay_line` after the record step. :data:`LINES` says which line each
step of each workflow prints, for :mod:`retrieval_eval.airflow.adapter`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def plan_line(batches: list[Any], job: Mapping[str, Any]) -> str:
    """The plan task's line: how many batches, of how many items."""
    sizes = [b.get("stop", 0) - b.get("start", 0) for b in batches if isinstance(b, Mapping)]
    total = sum(sizes)
    items = f" of {total} question{'s' if total != 1 else ''}" if len(sizes) == len(batches) else ""
    return f"planned {len(batches)} batch{'es' if len(batches) != 1 else ''}{items}"


def _record_line(record: dict[str, Any], job: Mapping[str, Any]) -> str:
    from retrieval_eval.airflow.links import dashboard_url

    # Airflow 3's execution API lets a task set no note on its own DAG run: the log (and the
    # task's "Run page" extra link, airflow/links.py) says where the run page is
    return verdict_line(record, dashboard_url(job.get("ui_base_url")), record.get("result"))


def sample_line(batches: list[Any], job: Mapping[str, Any]) -> str:
    """A replay's plan line: ``sample top: 12 queries in 3 batches``."""
    stop = batches[-1]["stop"] if batches else 0
    return f"sample {job['sample']}: {stop} queries in {len(batches)} batches"


def replay_line(saved: dict[str, Any], job: Mapping[str, Any]) -> str:
    """A replay's record line: its headline (state, RBO, top-1 changes, where it was saved) on
    one line, then its page's link."""
    from retrieval_eval.replay.record import ReplayRecord
    from retrieval_eval.reports.links import replay_page_url
    from retrieval_eval.reports.replay import headline

    record = ReplayRecord.model_validate(saved)
    link = replay_page_url(job.get("ui_base_url"), record.replay_id)
    return headline(record).replace("\n", "; ") + (f" — {link}" if link else "")


LINES: dict[tuple[str, str], Callable[[Any, Mapping[str, Any]], str]] = {
    ("labelled_run", "plan"): plan_line,
    ("labelled_run", "reduce"): lambda reduced, job: score_line(reduced["result"]),
    ("labelled_run", "record"): _record_line,
    ("replay", "plan"): sample_line,
    ("replay", "record"): replay_line,
}


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


def worded_verdict(recorded: dict[str, Any]) -> dict[str, Any]:
    """The verdict of a record's XCom (stored as data: codes and figures) with its ``reasons``,
    ``warnings`` and ``summary`` worded, as the JSON contract has them."""
    from retrieval_eval.reports.verdict import verdict_document
    from retrieval_eval.verdicts.regression import Verdict

    return dict(verdict_document(Verdict.model_validate(recorded["verdict"])))

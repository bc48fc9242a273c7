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


def pool_plan_line(batches: list[Any], job: Mapping[str, Any]) -> str:
    """``planned 4 batches: 2 retrievers over 46 questions``."""
    names = {name for b in batches for name in b.get("retrievers", ())}
    questions = max((b.get("stop", 0) for b in batches), default=0)
    return (
        f"planned {len(batches)} batch{'es' if len(batches) != 1 else ''}: "
        f"{len(names)} retriever{'s' if len(names) != 1 else ''} over {questions} questions"
    )


def pool_line(outcome: dict[str, Any], job: Mapping[str, Any]) -> str:
    """``pooled 31 candidates for 12 questions of S (bm25: holes@10 40.0%, ...)``."""
    from retrieval_eval.formats.numbers import pct

    holes = ", ".join(
        f"{p['name']}: holes@{p['holes_depth']} "
        f"{pct(p['holes_unjudged'] / p['holes_slots'] if p['holes_slots'] else None)}"
        for p in outcome["pooled"]
    )
    notes = f"; {len(outcome['notes'])} note(s): {'; '.join(outcome['notes'])}"
    return (
        f"pooled {len(outcome['rows'])} candidates for {outcome['questions']} questions of "
        f"{outcome['set_identifier']} ({holes})" + (notes if outcome["notes"] else "")
    )


def judge_plan_line(batches: list[Any], job: Mapping[str, Any]) -> str:
    """``planned 2 batches of 31 pairs``."""
    pairs = sum(len(b.get("pairs", ())) for b in batches)
    return f"planned {len(batches)} batch{'es' if len(batches) != 1 else ''} of {pairs} pairs"


def judge_batch_line(part: dict[str, Any], job: Mapping[str, Any]) -> str:
    """One judge batch's progress and cost: ``15 answers (3 from the cache), 12 graded; cost
    $0.0031``, and why it stopped or failed."""
    answers = part["answers"]
    cached = sum(1 for a in answers if a.get("cached"))
    graded = sum(1 for a in answers if a.get("grade") is not None)
    cost = sum(a.get("cost_usd", 0.0) for a in answers if not a.get("cached"))
    line = f"{len(answers)} answers ({cached} from the cache), {graded} graded; cost ${cost:.4f}"
    for why in ("stopped", "error"):
        if part.get(why):
            line += f"; {why}: {part[why]}"
    return line


def judge_line(outcome: dict[str, Any], job: Mapping[str, Any]) -> str:
    """The judging's total, as ``sets judge auto`` prints it."""
    return (
        f"judge:{outcome['judge']} ({outcome.get('model') or 'python'}, identity "
        f"{outcome['identity']}): {outcome['pairs']} pair(s): {outcome['from_cache']} from the "
        f"cache, {outcome['asked']} asked, {outcome['not_asked']} not asked; "
        f"{outcome['graded']} graded, {outcome['unjudged']} unjudged; cost "
        f"${outcome['cost_usd']:.4f}; {outcome['stored']} judgment(s) stored"
    )


def calibration_line(calibration: dict[str, Any], job: Mapping[str, Any]) -> str:
    """``judge:sim on S: Cohen's κ 0.812 [0.700, 0.901] on 40 pairs, min_kappa 0.60: passed;
    cost $0.0012``."""
    from retrieval_eval.formats.numbers import decimal

    verdict = "passed" if calibration["passed"] else "failed"
    return (
        f"judge:{calibration['judge']} on {calibration['set_identifier']}: Cohen's κ "
        f"{decimal(calibration['kappa'], 3)} [{decimal(calibration['kappa_low'], 3)}, "
        f"{decimal(calibration['kappa_high'], 3)}] on {calibration['pairs']} people-graded "
        f"pairs, min_kappa {decimal(calibration['min_kappa'], 2)}: {verdict}; "
        f"cost ${calibration.get('cost_usd', 0.0):.4f}"
    )


def promote_line(outcome: dict[str, Any], job: Mapping[str, Any]) -> str:
    """``wrote F: set S version 2: 4 target(s) added, ...``, or why it was not written."""
    entry = outcome["entry"]
    identifier = outcome["read"]["identifier"]
    if not outcome["written"]:
        return f"version {entry['version']} of {identifier!r} not written: lint or the promotion refused it"
    return (
        f"wrote {outcome['target']}: set {identifier!r} version {entry['version']}: "
        f"{len(entry['added'])} target(s) added, {len(entry['removed'])} removed, "
        f"{len(entry['regraded'])} regraded, {len(entry['not_relevant'])} judged not relevant; "
        f"raters: {', '.join(entry['raters']) or 'none'}"
    )


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
    ("pool", "plan"): pool_plan_line,
    ("pool", "record"): pool_line,
    ("judge", "plan"): judge_plan_line,
    ("judge", "execute"): judge_batch_line,
    ("judge", "record"): judge_line,
    ("promote", "record"): promote_line,
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

"""A replay as text, Markdown or JSON: the drift verdict, the figures overall and per bucket, and
the queries that moved most with both rankings side by side. Queries appear only in their stored
form (redacted, hashed or plain, as the sample was stored)."""

from __future__ import annotations

from typing import Any

from retrieval_eval.formats.numbers import ci, decimal, pct
from retrieval_eval.replay.compare import Comparison, Figures, QueryChange
from retrieval_eval.replay.record import ReplayRecord
from retrieval_eval.reports.verdict import index_versus

STATE_WORDS = {
    "first": "FIRST REPLAY (nothing to compare with yet)",
    "no_drift": "NO DRIFT",
    "drift": "RANKING DRIFT",
    "invalid": "INVALID REPLAY",
    "empty": "NOTHING TO COMPARE",
}


def _rbo(value: float | None) -> str:
    return decimal(value, 3)


def headline(outcome: ReplayRecord) -> str:
    c = outcome.comparison
    o = c.overall
    version = f", index {outcome.index_version}" if outcome.index_version else ""
    what = f"sample {outcome.sample_name} ({len(outcome.rankings)} queries{version})"
    if c.state == "first" or outcome.against is None:
        return f"{STATE_WORDS[c.state]}: {what}, retriever {outcome.retriever}"
    before = outcome.compared_index_version
    was = f" ({index})" if (index := index_versus(outcome.index_version, before)) else ""
    line = f"{STATE_WORDS[c.state]}: {what}, retriever {outcome.retriever} against {outcome.against}{was}"
    if o.queries == 0:
        return line
    return (
        f"{line}\nmean RBO@{c.k} (p={c.p:g}) {_rbo(o.mean_rbo)}, weighted "
        f"{_rbo(o.weighted_mean_rbo)}; top-1 changed {pct(o.top1_changed_share)} "
        f"({o.top1_changed}/{o.queries}), weighted {pct(o.weighted_top1_changed)}"
    )


def render_replay(outcome: ReplayRecord, fmt: str = "text", most: int = 10) -> str:
    if fmt == "json":
        from retrieval_eval.formats.jsonio import dumps

        return dumps(replay_document(outcome, most)) + "\n"
    if fmt == "markdown":
        return _markdown(outcome, most)
    return _text(outcome, most)


def _figures_rows(c: Comparison) -> list[tuple[str, Figures]]:
    return [("all", c.overall), *c.buckets.items()]


def _text(outcome: ReplayRecord, most: int) -> str:
    from rich.console import RenderableType
    from rich.text import Text

    from retrieval_eval.reports.text import add_rows, new_table, print_tables

    c = outcome.comparison
    parts: list[RenderableType] = [Text(headline(outcome))]
    parts += [Text(f"  - {reason}") for reason in c.reasons]
    parts += [Text(line) for line in sides(outcome)]
    if c.errors:
        parts.append(Text(failed_line(outcome)))
        parts += [Text(f"  - {line}") for line in reason_lines(c.error_reasons())]
    if c.state != "first" and c.overall.queries:
        table = new_table(plain=True)
        for name in FIGURE_COLUMNS:
            table.add_column(name, justify="left" if name == "bucket" else "right")
        add_rows(
            table,
            [
                [
                    name,
                    str(f.queries),
                    _rbo(f.mean_rbo),
                    _rbo(f.quantiles.get("p10")),
                    _rbo(f.quantiles.get("p50")),
                    pct(f.top1_changed_share),
                    ci(f.top1_interval),
                    _rbo(f.weighted_mean_rbo),
                    pct(f.weighted_top1_changed),
                ]
                for name, f in _figures_rows(c)
            ],
        )
        parts.append(table)
        moved = c.most_changed(most)
        if moved:
            rows = new_table(
                f"Most changed ({len(moved)}, lowest RBO weighted by count)", plain=True
            )
            for name in ("query", "count", "bucket", "RBO", "before (top 3)", "after (top 3)"):
                rows.add_column(name, overflow="fold")
            add_rows(
                rows,
                [
                    [
                        m.text,
                        str(m.count),
                        m.bucket,
                        _rbo(m.rbo),
                        " ".join(m.before[:3]),
                        " ".join(m.after[:3]),
                    ]
                    for m in moved
                ],
            )
            parts.append(rows)
    parts += [Text(note) for note in outcome.notes]  # a spooled replay says where it went
    return print_tables(parts, width=120, tty=False)


def failed_line(outcome: ReplayRecord) -> str:
    c = outcome.comparison
    return (
        f"{c.errors} of {len(outcome.rankings)} queries failed ({pct(c.error_rate)}): never "
        "counted as unchanged; by reason:"
    )


def reason_lines(groups: list[dict[str, Any]]) -> list[str]:
    """One line per reason queries failed (:meth:`Comparison.error_reasons`): how many, and one
    error as kept (masked)."""
    return [f"{g['reason']}: {g['count']} (e.g. {g['example']})" for g in groups]


def sides(outcome: ReplayRecord) -> list[str]:
    """Which rankings are "before" and which "after": with ``--against`` the other retriever
    is before, the one replayed after."""
    if outcome.against is None:
        return []
    return [f"before: {outcome.against}; after: retriever {outcome.retriever} (this replay)"]


FIGURE_COLUMNS = (
    "bucket",
    "queries",
    "mean RBO",
    "p10",
    "median",
    "top-1 changed",
    "95% interval",
    "weighted RBO",
    "weighted top-1 changed",
)


def _markdown(outcome: ReplayRecord, most: int) -> str:
    from retrieval_eval.formats.markdown_text import md_text

    c = outcome.comparison
    lines = [f"### {md_text(headline(outcome).splitlines()[0])}", ""]
    if len(headline(outcome).splitlines()) > 1:
        lines += [md_text(headline(outcome).splitlines()[1]), ""]
    lines += [f"- {md_text(r)}" for r in c.reasons]
    lines += [f"\n{md_text(line)}" for line in sides(outcome)]
    if c.errors:
        lines += ["", md_text(failed_line(outcome)), ""]
        lines += [f"- {md_text(line)}" for line in reason_lines(c.error_reasons())]
    if c.state != "first" and c.overall.queries:
        lines += [
            "",
            "| bucket | queries | mean RBO | top-1 changed | weighted RBO | weighted top-1 changed |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for name, f in _figures_rows(c):
            lines.append(
                f"| {name} | {f.queries} | {_rbo(f.mean_rbo)} | {pct(f.top1_changed_share)} | "
                f"{_rbo(f.weighted_mean_rbo)} | {pct(f.weighted_top1_changed)} |"
            )
        moved = c.most_changed(most)
        if moved:
            lines += [
                "",
                "<details><summary>Most changed queries</summary>",
                "",
                "| query | count | RBO | before | after |",
                "|---|---:|---:|---|---|",
            ]
            for m in moved:
                lines.append(
                    f"| {md_text(m.text)} | {m.count} | {_rbo(m.rbo)} | "
                    f"{md_text(' '.join(m.before[:3]))} | {md_text(' '.join(m.after[:3]))} |"
                )
            lines += ["", "</details>"]
    lines += [f"\n{md_text(note)}" for note in outcome.notes]
    return "\n".join(lines) + "\n"


def _figures_doc(f: Figures) -> dict[str, Any]:
    return f.as_json("top1_changed_interval")


def _change_doc(m: QueryChange) -> dict[str, Any]:
    return {
        "key": m.key,
        "query": m.text,
        "count": m.count,
        "bucket": m.bucket,
        "rbo": m.rbo,
        "rbo_residual": m.residual,
        "jaccard": m.jaccard,
        "top1_changed": m.top1_changed,
        "top3_overlap": m.overlap3,
        "before": list(m.before),
        "after": list(m.after),
        "error": m.error,
    }


def replay_document(outcome: ReplayRecord, most: int = 10) -> dict[str, Any]:
    """The replay's JSON contract."""
    c = outcome.comparison
    return {
        "kind": "replay",
        "replay_id": outcome.replay_id,
        "run_key": outcome.run_key,
        "sample": outcome.sample_name,
        "sample_fingerprint": outcome.sample.fingerprint,
        "privacy": outcome.sample.privacy,
        "retriever": outcome.retriever,
        "against": outcome.against,
        "compared_replay_id": outcome.compared_id if outcome.before is not None else None,
        "index_version": outcome.index_version,
        "compared_index_version": outcome.compared_index_version,
        "k": c.k,
        "p": c.p,
        "state": c.state,
        "reasons": list(c.reasons),
        "queries": len(outcome.rankings),
        "errors": c.errors,
        "error_rate": c.error_rate,
        "error_reasons": c.error_reasons(),
        "overall": _figures_doc(c.overall),
        "buckets": {name: _figures_doc(f) for name, f in c.buckets.items()},
        "most_changed": [_change_doc(m) for m in c.most_changed(most)],
        "package_version": outcome.package_version,
        "spool_path": str(outcome.spool_path) if outcome.spool_path else None,
        "notes": list(outcome.notes),
    }

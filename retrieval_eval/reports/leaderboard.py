"""A :class:`~retrieval_eval.workflows.leaderboard.Leaderboard` as text, Markdown, CSV or JSON.

- text: the board (rank, rates with 95 % intervals: top-1, top-3, then every other depth one of
  the runs gates, MRR, nDCG, errors, latency, holes: the share of the top 10 unjudged), then each
  retriever against the reference (shared questions, top-1 change with its paired interval,
  McNemar p, Holm-corrected p, ``*`` when significant), the legend, any warnings, and the
  questions where they disagree on top-1, one column per retriever. Aligned columns (rich).
- with model judgments of the set, after the board: who judged each retriever's top places and
  its hit rate three ways (:mod:`retrieval_eval.reports.machine`), one row per depth; JSON
  gives them as each entry's ``judge_figures``.
- markdown: the same tables as GitHub tables; the disagreements in a collapsed ``<details>``;
  names and ids through :func:`~retrieval_eval.formats.markdown_text.md_text` (shown, never rendered).
- csv: one row per retriever (RFC 4180), the rates, intervals and comparison flattened into
  columns (``holes_depth``, ``holes_unjudged``, ``holes_slots``, ``holes_share`` after the
  seed's columns, then the deeper depths' ``top{k}_hit_rate``, ``top{k}_ci_low``,
  ``top{k}_ci_high``; then, only when an entry has model judgments, the figures beside them
  (:func:`retrieval_eval.reports.machine.csv_header`: ``judge_holes_*`` and, per depth, the
  three hit rates with their bounds), empty for an entry without);
  text cells that a spreadsheet would run as a formula get a leading ``'``.
- json: the model, ``model_dump(mode="json")``; its keys do not depend on the data.

An invalid run's entry reads ``name (invalid run)`` in text and Markdown, ``valid`` 0 in CSV and
``"valid": false`` in JSON; the warnings name it too.

A question's outcome reads ``top-1/top-3`` (``hit/miss``), with the rank of the first expected
document when one was found, ``error`` when retrieval failed and ``absent`` when the run lacks
the question.
"""

from __future__ import annotations

from collections.abc import Sequence
from textwrap import wrap
from typing import TYPE_CHECKING, Any

from retrieval_eval.formats.csv_cells import csv_text
from retrieval_eval.formats.jsonio import dumps
from retrieval_eval.formats.markdown_text import md_row, md_text
from retrieval_eval.formats.numbers import (
    ci,
    decimal,
    ms,
    p_value,
    pct,
    pts_interval,
    signed_points,
)
from retrieval_eval.reports.csv import _number
from retrieval_eval.reports.machine import (
    compare_rows,
    compare_title,
    csv_cells,
    csv_depths,
    csv_header,
)
from retrieval_eval.reports.text import add_rows, new_table, print_tables
from retrieval_eval.workflows.leaderboard import Entry, Leaderboard, Outcome

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.table import Table

FORMATS = ("text", "json", "markdown", "csv")
MARKER = "*"
INVALID = "(invalid run)"  # after the name of an invalid run's entry, in text and Markdown
WIDTH = 100  # the legend's lines; the tables are as wide as their cells

BOARD_COLUMNS = ("#", "retriever", "run", "date (UTC)", "questions", "top-1 [95% CI]")
BOARD_RIGHT = {0, 2, 4, 7, 8, 9, 10, 11}  # the numbers but rates with intervals and dates
VERSUS_COLUMNS = ("retriever", "shared", "only it / only ref", "Δ top-1 [paired 95% CI]")
CSV_COLUMNS = (
    "rank", "retriever", "name", "run_id", "run_date", "question_count", "top1_hit_rate",
    "top1_ci_low", "top1_ci_high", "top3_hit_rate", "top3_ci_low", "top3_ci_high", "mrr",
    "ndcg_metric", "ndcg", "error_count", "latency_p50_ms", "latency_p95_ms", "is_reference",
    "shared_questions", "top1_only_this", "top1_only_reference", "top1_delta",
    "top1_delta_ci_low", "top1_delta_ci_high", "p_value", "p_holm", "significant", "valid",
)  # fmt: skip


HOLES_COLUMNS = ("holes_depth", "holes_unjudged", "holes_slots", "holes_share")  # then depths


def render_leaderboard(board: Leaderboard, fmt: str) -> str:
    if fmt == "json":
        return dumps(board.model_dump(mode="json")) + "\n"
    if fmt == "csv":
        return _csv(board)
    if fmt == "markdown":
        return _markdown(board)
    if fmt == "text":
        return _text(board)
    raise ValueError(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}")


def _mrr_header(board: Leaderboard) -> str:
    """``MRR@40`` when every entry's MRR read one fetch, else ``MRR`` (each cell says)."""
    metrics = {e.mrr_metric for e in board.entries if e.mrr_metric}
    return f"MRR@{metrics.pop().partition('@')[2]}" if len(metrics) == 1 else "MRR"


def _ndcg_header(board: Leaderboard) -> str:
    metrics = {e.ndcg_metric for e in board.entries if e.ndcg_metric}
    return f"nDCG@{metrics.pop().partition('@')[2]}" if len(metrics) == 1 else "nDCG"


def _deeper(board: Leaderboard) -> list[int]:
    """The board's depths beyond top-1 and top-3: one more column each."""
    return board.deeper_depths()


def _board_right(board: Leaderboard) -> set[int]:
    """The right-aligned board columns: :data:`BOARD_RIGHT`, past the depths' own columns."""
    shift = len(_deeper(board))
    return {i if i < 7 else i + shift for i in BOARD_RIGHT} | {12 + shift}  # holes


def _board_rows(board: Leaderboard) -> tuple[list[str], list[list[str]]]:
    deeper = _deeper(board)
    headers = [*BOARD_COLUMNS, "top-3 [95% CI]", *(f"top-{d} [95% CI]" for d in deeper)]
    headers += [_mrr_header(board), _ndcg_header(board), "errors", "p50", "p95"]
    headers.append(_holes_header(board))
    several_mrr = headers[7 + len(deeper)] == "MRR"
    several_ndcg = headers[8 + len(deeper)] == "nDCG"
    rows = []
    for rank, e in enumerate(board.entries, 1):
        mrr, ndcg = decimal(e.mrr, 3), decimal(e.ndcg, 3)
        if several_mrr and e.mrr_metric:
            mrr += f" ({e.mrr_metric})"
        if several_ndcg and e.ndcg_metric:
            ndcg += f" ({e.ndcg_metric})"
        rows.append(
            [
                str(rank),
                e.name if e.valid else f"{e.name} {INVALID}",
                str(e.run_id),
                f"{e.run_date:%Y-%m-%d %H:%M}",
                str(e.question_count),
                _rate(e.top1_hit_rate, e.top1_hit_rate_ci),
                _rate(e.top3_hit_rate, e.top3_hit_rate_ci),
                *(_rate(e.hit_rate_at.get(d), e.hit_rate_at_ci.get(d)) for d in deeper),
                mrr,
                ndcg,
                str(e.error_count),
                ms(e.latency_p50_ms),
                ms(e.latency_p95_ms),
                _holes(board, e),
            ]
        )
    return headers, rows


def _holes_header(board: Leaderboard) -> str:
    """``holes@10`` when every entry's holes are at one depth, else ``holes`` (each cell says)."""
    depths = {e.holes_depth for e in board.entries}
    return f"holes@{depths.pop()}" if len(depths) == 1 else "holes"


def _holes(board: Leaderboard, e: Entry) -> str:
    one = len({x.holes_depth for x in board.entries}) == 1
    return pct(e.holes_share) + ("" if one else f" (@{e.holes_depth})")


def _versus_rows(board: Leaderboard) -> tuple[list[str], list[list[str]]]:
    headers = [*VERSUS_COLUMNS, "p", "p Holm", ""]
    rows = []
    for e in board.entries:
        v = e.versus
        if v is None:
            continue
        rows.append(
            [
                e.name,
                str(v.shared_questions),
                f"{v.top1_only_this} / {v.top1_only_reference}",
                f"{signed_points(v.top1_delta)} {pts_interval(v.top1_delta_ci)}",
                p_value(v.p_value),
                p_value(v.p_holm),
                MARKER if v.significant else "",
            ]
        )
    return headers, rows


def _difference_rows(board: Leaderboard) -> tuple[list[str], list[list[str]]]:
    names = [e.name for e in board.entries]
    rows = [[d.id, *(_mark(d.outcomes.get(n)) for n in names)] for d in board.differences]
    return ["id", *names], rows


def _title(board: Leaderboard) -> str:
    why = "the best top-1" if board.reference_is_best else "as asked"
    return f"{board.set}: {len(board.entries)} retrievers, compared with {board.reference} ({why})"


def _legend(board: Leaderboard) -> str:
    pairs = len(board.entries) - 1
    return (
        f"{MARKER} top-1 differs from {board.reference} at α = {board.alpha:g}: McNemar's exact "
        f"test on the questions both runs have, p Holm-corrected across the {pairs} "
        f"comparison{'s' if pairs != 1 else ''} with the reference. Δ is the other retriever "
        "minus the reference."
    )


def _judged(board: Leaderboard) -> list[tuple[str, dict[str, Any] | None]]:
    """Each entry's name and its figures beside model judgments (None without any)."""
    return [(e.name, e.judge_figures) for e in board.entries]


def _text(board: Leaderboard) -> str:
    from rich.text import Text

    parts: list[RenderableType] = [
        _title(board),
        _aligned(*_board_rows(board), right=_board_right(board)),
    ]
    headers, rows = compare_rows(_judged(board))
    if rows:
        parts += ["", f"{compare_title(_judged(board))}:", _aligned(headers, rows, right=set())]
    parts += ["", f"Against {board.reference} on top-1:"]
    parts.append(_aligned(*_versus_rows(board), right={1, 4, 5}))
    parts += [
        *wrap(_legend(board), WIDTH, break_on_hyphens=False),
        *(f"warning: {w}" for w in board.warnings),
        "",
    ]
    if board.differences:
        parts.append(f"Questions where they disagree on top-1 ({len(board.differences)}):")
        parts.append(_aligned(*_difference_rows(board), right=set()))
    else:
        parts.append("No question where they disagree on top-1.")
    return print_tables([Text(p) if isinstance(p, str) else p for p in parts], tty=False)


def _markdown(board: Leaderboard) -> str:
    lines = [f"### {md_text(_title(board))}", ""]
    lines += [*_md_table(*_board_rows(board), right=_board_right(board)), ""]
    headers, rows = compare_rows(_judged(board))
    if rows:
        lines += [f"**{md_text(compare_title(_judged(board)))}**", ""]
        lines += [*_md_table(headers, rows, right={3, 4, 5}), ""]
    lines += [f"**Against {md_text(board.reference)} on top-1**", ""]
    lines += [*_md_table(*_versus_rows(board), right={1, 4, 5}), ""]
    lines += [md_text(_legend(board)), ""]  # its MARKER too: a lone * would open emphasis
    lines += [f"> warning: {md_text(w)}" for w in board.warnings]
    if board.warnings:
        lines.append("")
    count = len(board.differences)
    if count:
        table = _md_table(*_difference_rows(board), right=set())
        lines += [
            f"<details><summary>Questions where they disagree on top-1 ({count})</summary>",
            "",
            *table,
            "",
            "</details>",
        ]
    else:
        lines.append("No question where they disagree on top-1.")
    return "\n".join(lines) + "\n"


def _csv(board: Leaderboard) -> str:
    deeper = _deeper(board)  # after the older columns: readers by position keep working
    extra = [f"top{d}_{key}" for d in deeper for key in ("hit_rate", "ci_low", "ci_high")]
    figures = [e.judge_figures for e in board.entries]
    judged = any(doc is not None for doc in figures)  # the model's columns only with a model
    depths = csv_depths(figures)
    rows = []
    for rank, e in enumerate(board.entries, 1):
        deep = []
        for d in deeper:
            interval = _pair(e.hit_rate_at_ci.get(d))
            deep += [_number(e.hit_rate_at.get(d)), *(_number(b) for b in interval or (None,) * 2)]
        holes = [e.holes_depth, e.holes_unjudged, e.holes_slots, _number(e.holes_share)]
        judge = csv_cells(e.judge_figures, depths) if judged else []
        rows.append([*_csv_row(rank, e), *holes, *deep, *judge])
    judge_header = csv_header(depths) if judged else []
    return csv_text([*CSV_COLUMNS, *HOLES_COLUMNS, *extra, *judge_header], rows)


def _csv_row(rank: int, e: Entry) -> list[object]:
    v = e.versus
    top1, top3 = _pair(e.top1_hit_rate_ci), _pair(e.top3_hit_rate_ci)
    delta_ci = _pair(v.top1_delta_ci) if v else None
    return [
        rank,
        e.retriever,
        e.name,
        e.run_id,
        e.run_date.isoformat(),
        e.question_count,
        _number(e.top1_hit_rate),
        _number(top1[0] if top1 else None),
        _number(top1[1] if top1 else None),
        _number(e.top3_hit_rate),
        _number(top3[0] if top3 else None),
        _number(top3[1] if top3 else None),
        _number(e.mrr),
        e.ndcg_metric or "",
        _number(e.ndcg),
        e.error_count,
        _number(e.latency_p50_ms),
        _number(e.latency_p95_ms),
        int(e.is_reference),
        "" if v is None else v.shared_questions,
        "" if v is None else v.top1_only_this,
        "" if v is None else v.top1_only_reference,
        _number(v.top1_delta if v else None),
        _number(delta_ci[0] if delta_ci else None),
        _number(delta_ci[1] if delta_ci else None),
        _number(v.p_value if v else None),
        _number(v.p_holm if v else None),
        "" if v is None else int(v.significant),
        int(e.valid),
    ]


def _pair(values: list[float] | None) -> tuple[float, float] | None:
    return None if values is None else (values[0], values[1])


def _rate(rate: float | None, interval: list[float] | None) -> str:
    return f"{pct(rate)} {ci(interval)}"


def _mark(outcome: Outcome | None) -> str:
    if outcome is None:
        return "absent"
    if outcome.error is not None:
        return "error"
    top1 = "hit" if outcome.top1_hit else "miss"
    top3 = "hit" if outcome.top3_hit else "miss"
    rank = outcome.first_hit_rank
    return f"{top1}/{top3}" + ("" if rank is None else f" (rank {rank})")


def _aligned(headers: Sequence[str], rows: list[list[str]], right: set[int]) -> Table:
    """Aligned columns without a box; ``right`` ones right-aligned."""
    table = new_table(plain=True)
    for i, header in enumerate(headers):
        table.add_column(header, justify="right" if i in right else "left", no_wrap=True)
    add_rows(table, rows)
    return table


def _md_table(headers: Sequence[str], rows: list[list[str]], right: set[int]) -> list[str]:
    rule = ["---:" if i in right else "---" for i in range(len(headers))]
    # md_row escapes every cell, the MARKER too ("\\*": a lone * would open emphasis)
    return [md_row(list(headers)), "| " + " | ".join(rule) + " |", *map(md_row, rows)]

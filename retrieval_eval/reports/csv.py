"""Every CSV the project emits (:func:`csv_text`), one row per question as CSV, and per-question
metrics as ``trec_eval -q`` prints them."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from retrieval_eval.evaluation.results import RunResult, extra_depths
from retrieval_eval.formats.csv_cells import csv_text


def _number(value: float | None) -> float | None:
    """A figure as a number cell; NaN (no value) as an empty one."""
    return None if value is None or value != value else float(value)


def _ids_cell(ids: Sequence[str]) -> str:
    """A list of ids as one CSV cell: a JSON array spaced for a reader, ``["a", "b"]``
    (``json.loads`` reads it back)."""
    return json.dumps(list(ids), ensure_ascii=False)


def _grades_cell(grades: Mapping[str, int] | None) -> str:
    """A question's grades as one CSV cell, a JSON object; empty when it gives none."""
    return "" if grades is None else json.dumps(dict(grades), ensure_ascii=False)


def render_csv(result: RunResult) -> str:
    """One row per question with every per-question figure (RFC 4180, written by :mod:`csv`).

    A list of ids is one cell holding a JSON array (``["a|b", "c"]``): an id may hold ``|``,
    ``,``, quotes or a newline, so no separator could be told apart from the ids; ``csv.reader``
    then ``json.loads`` give the ids back exactly. Hits are 1 or 0; an empty cell is a missing
    value (no rank, no latency, a metric the question does not count in). Text cells that start
    with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return get a leading ``'`` (a JSON
    array starts with ``[``, so it never does).

    The next two columns (after every older one, so readers by position keep working) mark stale
    labels (:meth:`RunResult.stale_targets`): ``stale_label`` is 1 for a question whose every
    target is gone from the index, else 0, and empty when the run's labels were not checked;
    ``dead_ids`` names a stale question's dead targets (as the JSON contract's ``dead_ids``), a
    JSON array (``[]`` for the others), empty when the labels were not checked. Then one
    ``top{k}_hit`` column (1 or 0) for each gated depth beyond top-1 and top-3 (none by default).
    Last, when any question gives grades, ``grades``: its judged grades as a JSON object
    (``{"a.md": 2}``), empty for an ungraded question; ``expected_document_ids`` are the targets
    at the run's relevance level.
    """
    from retrieval_eval.evaluation.metrics import values

    columns = values(result.questions, result.settings.cutoffs)
    metric_values = [column.tolist() for column in columns.values()]
    extra = extra_depths(result.depths)
    graded = any(q.grades for q in result.questions)
    header = [
        "id",
        "question",
        "form",
        "hard_class",
        "expected_document_ids",
        "retrieved",
        "top1_hit",
        "top3_hit",
        "first_hit_rank",
        *columns,
        "latency_ms",
        "error",
        "stale_label",
        "dead_ids",
        *(f"top{depth}_hit" for depth in extra),
        *(["grades"] if graded else []),
    ]
    checked = result.dead_labels is not None and result.dead_labels.checked
    stale = result.stale_targets()
    rows = (
        [
            q.id,
            q.question,
            q.form.value,
            q.hard_class,
            _ids_cell(q.expected_document_ids),
            _ids_cell(q.retrieved),
            int(q.top1_hit),
            int(q.top3_hit),
            "" if q.first_hit_rank is None else q.first_hit_rank,
            *(_number(column[i]) for column in metric_values),
            _number(q.latency_ms),
            q.error,
            int(q.id in stale) if checked else "",
            _ids_cell(stale.get(q.id, [])) if checked else "",
            *(int(q.hit_at(depth)) for depth in extra),
            *([_grades_cell(q.grades)] if graded else []),
        ]
        for i, q in enumerate(result.questions)
    )
    return csv_text(header, rows)


def render_per_query(result: RunResult) -> str:
    """Per-question metrics as ``trec_eval -q`` prints them: ``metric<TAB>qid<TAB>value`` lines
    (the metric name padded to 22 characters, values to 4 decimals), question by question, then
    the ``all`` lines: ``num_q`` and each metric's mean. A question that does not count in a
    metric (recall, MRR, nDCG of a question nobody judged) has no line for it. MRR is named
    with the ids it saw (``mrr@12``): trec_eval's ``recip_rank`` reads up to 1,000 a query."""
    from retrieval_eval.evaluation.metrics import mean, values

    columns = values(result.questions, result.settings.cutoffs)
    shown = result.settings.shown_metric
    rows = {shown(name): column.tolist() for name, column in columns.items()}
    lines = []
    for i, q in enumerate(result.questions):
        for name, column in rows.items():
            value = column[i]
            if value == value:  # NaN: the question does not count
                lines.append(f"{name:<22}\t{q.id}\t{value:.4f}")
    lines.append(f"{'num_q':<22}\tall\t{len(result.questions)}")
    for name, column in columns.items():
        average = mean(column)
        if average is not None:
            lines.append(f"{shown(name):<22}\tall\t{average:.4f}")
    return "\n".join(lines) + "\n"

"""Per-question results into a run's figures: counts, rates, slices, latency percentiles, metrics.

Aggregation apart from the models it builds (:mod:`retrieval_eval.evaluation.results`), so the
secondary metrics (:mod:`retrieval_eval.evaluation.metrics`, which reads those models) need no
import cycle. They and numpy are imported when a run is summarised, so a command that fails on
its arguments loads neither. Counts and rates are standard-library passes over columns; latency
percentiles are numpy's (linear interpolation). The figures are what grouping
:meth:`RunResult.to_frame` with pandas gives (``tests/evaluation/test_results.py`` checks). Edge
cases (empty groups, questions without a hard class, failed calls' latency) are in
:mod:`retrieval_eval.evaluation.results`' docstring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from operator import attrgetter
from typing import Any

from retrieval_eval import installed_version
from retrieval_eval.evaluation.results import (
    Latency,
    QuestionResult,
    RunResult,
    RunSettings,
    SliceRates,
    paused_gc,
)
from retrieval_eval.golden.forms import QuestionForm


def _rate(hits: int, count: int) -> float | None:
    return hits / count if count else None


def _slices(
    values: Sequence[Any], top1: Sequence[bool], top3: Sequence[bool], always: list[str]
) -> dict[str, SliceRates]:
    """Questions and hits per value, as a groupby would give them: ``always`` first, then the
    other values sorted; questions without a value (None) are left out."""
    # one C-level counting pass over (value, top-1, top-3) triples
    counts: dict[Any, list[int]] = {}
    for (value, hit1, hit3), n in Counter(zip(values, top1, top3, strict=True)).items():
        if value is None:
            continue
        tally = counts.setdefault(value, [0, 0, 0])
        tally[0] += n
        tally[1] += n if hit1 else 0
        tally[2] += n if hit3 else 0
    out: dict[str, SliceRates] = {}
    for value in [*always, *sorted(v for v in counts if v not in always)]:
        n, t1, t3 = counts.get(value, (0, 0, 0))
        out[str(value)] = SliceRates(
            questions=n,
            top1_hits=t1,
            top3_hits=t3,
            top1_hit_rate=_rate(t1, n),
            top3_hit_rate=_rate(t3, n),
        )
    return out


def _latency(latencies: Sequence[float | None], errors: Sequence[str | None]) -> Latency:
    """p50 and p95 (linear interpolation) over the questions whose retrieval succeeded and
    whose latency is known (neither None nor NaN)."""
    ok = [
        ms
        for ms, error in zip(latencies, errors, strict=True)
        if error is None and ms is not None and ms == ms
    ]
    if not ok:
        return Latency()
    import numpy as np

    p50, p95 = np.percentile(ok, [50, 95]).tolist()
    return Latency(p50=p50, p95=p95)


@paused_gc()  # bulk allocation only: no user code runs in here
def summarise(
    questions: list[QuestionResult],
    *,
    set_identifier: str,
    labels_fingerprint: str,
    retriever: str,
    settings: RunSettings | None = None,
    set_name: str = "",
    corpus_revision: str | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    run_key: str | None = None,
) -> RunResult:
    """Aggregate per-question results into a :class:`RunResult`.

    ``metrics`` holds the secondary metrics at ``settings.cutoffs`` (see
    :mod:`retrieval_eval.evaluation.metrics` for their definitions and edge cases). The figures are what
    grouping :meth:`RunResult.to_frame` with pandas gives (``tests/evaluation/test_results.py`` checks).
    """
    from retrieval_eval.evaluation.metrics import compute

    settings = settings or RunSettings()
    count = len(questions)
    # one C-level attrgetter pass, transposed into columns
    fields = attrgetter("form", "hard_class", "top1_hit", "top3_hit", "latency_ms", "error")
    forms, classes, top1_col, top3_col, latencies, error_col = (
        zip(*map(fields, questions), strict=True) if count else ((),) * 6
    )
    top1 = int(sum(top1_col))
    top3 = int(sum(top3_col))
    errors = count - error_col.count(None)
    latency = _latency(latencies, error_col)
    now = datetime.now(UTC)
    extra: dict[str, Any] = {"run_key": run_key} if run_key else {}
    return RunResult(
        **extra,
        set_identifier=set_identifier,
        set_name=set_name,
        corpus_revision=corpus_revision,
        labels_fingerprint=labels_fingerprint,
        retriever=retriever,
        started_at=started_at or now,
        finished_at=finished_at or now,
        settings=settings,
        question_count=count,
        top1_hits=top1,
        top3_hits=top3,
        top1_hit_rate=_rate(top1, count),
        top3_hit_rate=_rate(top3, count),
        error_count=errors,
        valid=(errors / count if count else 0.0) <= settings.max_error_rate,
        by_form=_slices(forms, top1_col, top3_col, [f.value for f in QuestionForm]),
        by_hard_class=_slices(classes, top1_col, top3_col, []),
        latency_ms=latency,
        metrics=compute(questions, settings.cutoffs),
        questions=questions,
        package_version=installed_version(),
    )

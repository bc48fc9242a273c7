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
    TOP_K,
    Latency,
    QuestionResult,
    RunResult,
    RunSettings,
    SliceRates,
    extra_depths,
)
from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.safety.collector import paused_gc


def _rate(hits: int, count: int) -> float | None:
    return hits / count if count else None


def _slices(
    values: Sequence[Any], hits: dict[int, Sequence[bool]], depths: list[int], always: list[str]
) -> dict[str, SliceRates]:
    """Questions and hits per value, as a groupby would give them: ``always`` first, then the
    other values sorted; questions without a value (None) are left out. ``hits``: each depth's
    per-question hits (top-1 and top-3 first, then the other gated ``depths``)."""
    keys = list(hits)
    # one C-level counting pass over (value, hit at each depth) tuples
    counts: dict[Any, list[int]] = {}
    for (value, *hit), n in Counter(zip(values, *hits.values(), strict=True)).items():
        if value is None:
            continue
        tally = counts.setdefault(value, [0] * (len(keys) + 1))
        tally[0] += n
        for i, found in enumerate(hit, start=1):
            tally[i] += n if found else 0
    out: dict[str, SliceRates] = {}
    for value in [*always, *sorted(v for v in counts if v not in always)]:
        n, *found = counts.get(value, [0] * (len(keys) + 1))
        at = dict(zip(keys, found, strict=True))
        out[str(value)] = SliceRates(
            questions=n,
            top1_hits=at[1],
            top3_hits=at[TOP_K],
            top1_hit_rate=_rate(at[1], n),
            top3_hit_rate=_rate(at[TOP_K], n),
            hits_at={d: at[d] for d in depths},
        )
    return out


def _hits(questions: Sequence[QuestionResult], depth: int) -> list[bool]:
    return [q.hit_at(depth) for q in questions]


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
    set_version: int | None = None,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    run_key: str | None = None,
) -> RunResult:
    """Aggregate per-question results into a :class:`RunResult`.

    ``hits_at`` (overall and per slice) holds the hits at each of ``settings.depths``.
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
    depths = settings.depths
    hits: dict[int, Sequence[bool]] = {1: top1_col, TOP_K: top3_col}
    hits.update({d: _hits(questions, d) for d in extra_depths(depths)})
    errors = count - error_col.count(None)
    latency = _latency(latencies, error_col)
    now = datetime.now(UTC)
    extra: dict[str, Any] = {"run_key": run_key} if run_key else {}
    return RunResult(
        **extra,
        set_identifier=set_identifier,
        set_name=set_name,
        corpus_revision=corpus_revision,
        set_version=set_version,
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
        hits_at={d: int(sum(hits[d])) for d in depths},
        error_count=errors,
        valid=(errors / count if count else 0.0) <= settings.max_error_rate,
        by_form=_slices(forms, hits, depths, [f.value for f in QuestionForm]),
        by_hard_class=_slices(classes, hits, depths, []),
        latency_ms=latency,
        metrics=compute(questions, settings.cutoffs),
        questions=questions,
        package_version=installed_version(),
    )


def summarise_again(questions: list[QuestionResult], run: RunResult, **changed: Any) -> RunResult:
    """``questions`` (some of ``run``'s, or its rankings judged again) summarised as a run of
    ``run``'s set, labels, retriever, settings, set name, corpus, times and key, but what
    ``changed`` gives instead (any of :func:`summarise`'s keywords; ``set_version`` is kept
    only when given): the one way a run derived from another is built."""
    kept: dict[str, Any] = {
        "set_identifier": run.set_identifier,
        "labels_fingerprint": run.labels_fingerprint,
        "retriever": run.retriever,
        "settings": run.settings,
        "set_name": run.set_name,
        "corpus_revision": run.corpus_revision,
        "started_at": run.started_at,
        "finished_at": run.finished_at,
        "run_key": run.run_key,
    }
    return summarise(questions, **{**kept, **changed})

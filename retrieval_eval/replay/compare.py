"""Two replays of one sample, query by query, and the ranking-drift verdict.

Per query: RBO_ext at persistence ``p`` with its residual, Jaccard@k, whether the top-1 changed,
and how many of the top-3 both share. A query that failed on either side is an error: never
"unchanged", left out of every figure, counted in the error rate. Per replay: the mean and
quantiles of RBO, the share of queries whose top-1 changed (with its Wilson interval), both
again weighted by each query's count in the log, and per bucket (head / torso / tail).
A replay whose error rate passes ``max_error_rate`` is ``invalid``, never ``drift``; one with no
query to compare (an empty query log, or no query ranked by both replays) is ``empty``, never
``no_drift``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple, Protocol

from retrieval_eval.evaluation.intervals import Interval, wilson
from retrieval_eval.replay.rbo import rbo, top1_changed
from retrieval_eval.replay.specs import DriftThresholds
from retrieval_eval.safety.collector import paused_gc
from retrieval_eval.safety.limits import shorten

DriftState = Literal["first", "no_drift", "drift", "invalid", "empty"]
QUANTILES = (0.1, 0.25, 0.5, 0.75, 0.9)


class Ranked(NamedTuple):
    """One query's replay: its key, stored text, count, bucket, ranking (distinct ids) or error.

    A named tuple, as :class:`QueryChange`: a replay holds one per query, and a tuple is built
    several times faster than a frozen dataclass (no ``object.__setattr__`` per field)."""

    key: str
    text: str
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, on purpose
    bucket: str
    ids: tuple[str, ...]
    error: str | None = None


class Ranks(Protocol):
    """What a comparison reads of a query's ranking on the side compared with: its key, ids and
    error (a :class:`Ranked`, or a replay's packed ranking: no text, count or bucket)."""

    @property
    def key(self) -> str: ...

    @property
    def ids(self) -> Sequence[str]: ...

    @property
    def error(self) -> str | None: ...


class QueryChange(NamedTuple):
    """How one query's ranking moved between the two replays (``error`` set: not compared)."""

    key: str
    text: str
    count: int  # type: ignore[assignment]  # the field shadows tuple.count, on purpose
    bucket: str
    before: tuple[str, ...]
    after: tuple[str, ...]
    rbo: float | None = None
    residual: float | None = None
    jaccard: float | None = None
    top1_changed: bool | None = None
    overlap3: int | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Figures:
    """The figures of a set of compared queries."""

    queries: int
    mean_rbo: float | None
    top1_changed: int
    top1_changed_share: float | None
    top1_interval: Interval | None
    weighted_mean_rbo: float | None
    weighted_top1_changed: float | None
    quantiles: dict[str, float] = field(default_factory=dict)

    def as_json(self, interval_key: str) -> dict[str, Any]:
        """The figures as JSON values (the interval a list, or None) under their own names, the
        interval's ``interval_key``: one list of fields for the stored replay's figures and the
        replay report's JSON, which name the interval differently."""
        return {
            "queries": self.queries,
            "mean_rbo": self.mean_rbo,
            "quantiles": self.quantiles,
            "top1_changed": self.top1_changed,
            "top1_changed_share": self.top1_changed_share,
            interval_key: list(self.top1_interval) if self.top1_interval else None,
            "weighted_mean_rbo": self.weighted_mean_rbo,
            "weighted_top1_changed": self.weighted_top1_changed,
        }


@dataclass(frozen=True, slots=True)
class Comparison:
    """A replay against the one before it (or another retriever's), with the verdict."""

    p: float
    k: int
    changes: tuple[QueryChange, ...]
    overall: Figures
    buckets: dict[str, Figures]
    errors: int
    error_rate: float
    state: DriftState
    reasons: tuple[str, ...]

    def error_reasons(self) -> list[dict[str, Any]]:
        """The failed queries grouped by reason (:func:`error_reasons`)."""
        return error_reasons(c.error for c in self.changes)

    def most_changed(self, limit: int = 50, bucket: str | None = None) -> list[QueryChange]:
        """Compared queries, those that moved most first: lowest RBO weighted by count."""
        rows = [c for c in self.changes if c.rbo is not None and (bucket in (None, c.bucket))]
        rows.sort(key=lambda c: (-(1.0 - (c.rbo or 0.0)) * c.count, c.rbo, c.key))
        return rows[:limit]


SIDES = ("this replay", "the replay compared with")
_KIND = re.compile(r"[A-Za-z_][\w.]*")  # an exception's type, as a failed call's error starts


def error_reasons(errors: Iterable[str | None]) -> list[dict[str, Any]]:
    """Errors grouped by reason, most first: ``{"reason", "count", "example"}``. The reason is
    the side that failed and the exception's type ("this replay: RuntimeError"), or the whole
    message when it names no type (a timeout); the example is the first error of the group as
    kept (masked like the query it was asked for)."""
    groups: dict[str, dict[str, Any]] = {}
    for error in errors:
        if error is None:
            continue
        side, sep, rest = error.partition(": ")
        prefix = f"{side}: " if sep and side in SIDES else ""
        body = rest if prefix else error
        kind, sep, _ = body.partition(": ")
        reason = prefix + (kind if sep and _KIND.fullmatch(kind) else body)
        group = groups.setdefault(reason, {"reason": reason, "count": 0, "example": shorten(error)})
        group["count"] += 1
    return sorted(groups.values(), key=lambda g: (-g["count"], g["reason"]))


def compare_query(before: Ranks, after: Ranked, p: float, k: int) -> QueryChange:
    """One query's change; an error on either side makes it an error, not a figure. Jaccard@k
    and the top-3 overlap are the ones RBO counted on its way down both lists (equal to
    :func:`~retrieval_eval.replay.rbo.jaccard` and :func:`~retrieval_eval.replay.rbo.overlap_at`
    on distinct ids, which ``tests/replay/test_rbo.py`` checks)."""
    a, b = tuple(before.ids[:k]), after.ids[:k]  # a tuple's own slice: no copy within k
    error = after.error or before.error
    if error is not None:
        side = "this replay" if after.error else "the replay compared with"
        return QueryChange(
            after.key, after.text, after.count, after.bucket, a, b, error=f"{side}: {error}"
        )
    m = rbo(a, b, p)
    return QueryChange(
        after.key,
        after.text,
        after.count,
        after.bucket,
        a,
        b,
        m.ext,
        m.maximum - m.minimum,
        m.jaccard,
        top1_changed(a, b),
        m.overlap3,
    )


def figures(changes: Sequence[QueryChange]) -> Figures:
    """Mean, quantiles and top-1 change share of the compared queries, plain and weighted."""
    return _figures(*_columns(changes))


def _columns(changes: Sequence[QueryChange]) -> tuple[Any, Any, Any]:
    """The changes' RBO (NaN: not compared), counts and top-1 changes as numpy arrays."""
    import numpy as np

    values = np.array([c.rbo for c in changes], dtype=float)
    weights = np.array([c.count for c in changes], dtype=float)
    changed = np.array([bool(c.top1_changed) for c in changes], dtype=bool)
    return values, weights, changed


def _figures(values: Any, weights: Any, changed: Any) -> Figures:
    """:func:`figures` of the queries whose RBO is not NaN (the compared ones)."""
    import numpy as np

    done = ~np.isnan(values)
    values, weights, changed = values[done], weights[done], changed[done]
    if not len(values):
        return Figures(0, None, 0, None, None, None, None)
    quantiles = dict(
        zip((f"p{int(q * 100)}" for q in QUANTILES), np.quantile(values, QUANTILES), strict=True)
    )
    return Figures(
        queries=len(values),
        mean_rbo=float(values.mean()),
        top1_changed=int(changed.sum()),
        top1_changed_share=float(changed.mean()),
        top1_interval=wilson(int(changed.sum()), len(values)),
        weighted_mean_rbo=float(np.average(values, weights=weights)),
        weighted_top1_changed=float(np.average(changed, weights=weights)),
        quantiles={name: float(v) for name, v in quantiles.items()},
    )


@paused_gc()  # bulk allocation only: no user code runs in here
def compare(
    before: Sequence[Ranks] | None,
    after: Sequence[Ranked],
    *,
    p: float = 0.9,
    k: int = 10,
    thresholds: DriftThresholds | None = None,
) -> Comparison:
    """Compare ``after`` with ``before`` query by query (matched by key); with no ``before``
    the replay is the ``first`` of its series and only its error rate is judged."""
    thresholds = thresholds or DriftThresholds()
    errors_now = sum(1 for r in after if r.error is not None)
    if before is None:
        changes: tuple[QueryChange, ...] = tuple(
            QueryChange(r.key, r.text, r.count, r.bucket, (), r.ids[:k], error=r.error)
            for r in after
        )
    else:
        earlier = {r.key: r for r in before}.get
        missing = "not in the replay compared with"
        changes = tuple(
            compare_query(was, r, p, k)
            if (was := earlier(r.key)) is not None
            else QueryChange(r.key, r.text, r.count, r.bucket, (), r.ids[:k], error=missing)
            for r in after
        )
    errors = sum(1 for c in changes if c.error is not None) if before is not None else errors_now
    error_rate = errors / len(after) if after else 0.0
    import numpy as np

    # the figures overall and per bucket, from one set of columns (numpy masks, not passes)
    columns = _columns(changes)
    overall = _figures(*columns)
    bucket_of = np.array([c.bucket for c in changes], dtype=object)
    buckets = {
        name: _figures(*(column[mask] for column in columns))
        for name in ("head", "torso", "tail")
        if (mask := bucket_of == name).any()
    }
    state, reasons = _verdict(before is None, len(after), overall, error_rate, thresholds)
    return Comparison(p, k, changes, overall, buckets, errors, error_rate, state, reasons)


def _verdict(
    first: bool, queries: int, overall: Figures, error_rate: float, limits: DriftThresholds
) -> tuple[DriftState, tuple[str, ...]]:
    from retrieval_eval.formats.numbers import decimal, pct

    if error_rate > limits.max_error_rate:
        return "invalid", (
            f"error rate {pct(error_rate)} is above max_error_rate {pct(limits.max_error_rate)}",
        )
    if not queries:
        return "empty", (
            "the sample holds no queries (is the query log empty?): nothing to compare",
        )
    if not first and not overall.queries:
        return "empty", ("no query was ranked by both replays: nothing to compare",)
    if first:
        return "first", ("the first replay of this sample and retriever: nothing to compare",)
    reasons: list[str] = []
    checks = (
        ("mean RBO", overall.mean_rbo, limits.min_mean_rbo, "min_mean_rbo", False),
        (
            "top-1 changed",
            overall.top1_changed_share,
            limits.max_top1_changed,
            "max_top1_changed",
            True,
        ),
        (
            "weighted mean RBO",
            overall.weighted_mean_rbo,
            limits.min_weighted_mean_rbo,
            "min_weighted_mean_rbo",
            False,
        ),
        (
            "weighted top-1 changed",
            overall.weighted_top1_changed,
            limits.max_weighted_top1_changed,
            "max_weighted_top1_changed",
            True,
        ),
    )
    for label, value, limit, option, is_max in checks:
        if value is None or limit is None:
            continue
        if (value > limit) if is_max else (value < limit):
            word = "above" if is_max else "below"
            shown = pct(value) if is_max else decimal(value, 3)
            bound = pct(limit) if is_max else decimal(limit, 3)
            reasons.append(f"{label} {shown} is {word} {option} {bound}")
    return ("drift" if reasons else "no_drift"), tuple(reasons)

"""Secondary metrics over DISTINCT documents: hit_rate@k, recall@k, MRR and nDCG@k.

Each metric is one small function that returns per-question values (a float array in question
order, ``NaN`` where a question does not count), as ranx does; :func:`per_question` gives them
as a DataFrame (it alone imports pandas). :func:`compute` gives the ``RunResult.metrics``
figures, their means, without numpy (numpy is imported by the per-question functions only).

They read what the scorer keeps per question (:class:`~retrieval_eval.evaluation.results.QuestionResult`):
``retrieved`` (distinct ids, best first, down to the deepest cutoff), ``first_hit_rank`` (over
every distinct id fetched), ``expected_document_ids`` and ``error``. So:

- Duplicates: a document counts once, at its FIRST occurrence (the scorer collapsed them).
  trec_eval and ranx read a run into a mapping, so a repeated id keeps its LAST line's score.
- Errors: a question whose retrieval failed scores 0 in every metric, no-result questions
  included (an outage never scores as "correctly found nothing").
- No-result questions (no expected documents): they count in ``hit_rate@k`` exactly as in the
  primary top-1/top-3 rates (a hit only when the retriever returned nothing), and are EXCLUDED
  from the means of recall, MRR and nDCG, which are undefined without targets (``NaN``
  per question). trec_eval and ranx cannot express such a question at all.
- MRR is the reciprocal rank of the first target among the distinct ids the scorer fetched
  (``depth × overfetch_multiplier`` raw ids, 12 by default): a first target found deeper scores
  0, as it would in trec_eval on a run cut to that length. trec_eval and ranx use whatever depth
  the run holds (often 100 or 1000), so pass ``--k`` up to the depth you want MRR to see.
- nDCG uses binary gains (a target is worth 1) and the log2(rank + 1) discount; the ideal
  ranking puts ``min(k, number of targets)`` targets first.
- A mean over no counting question is ``None``.
- Cutoffs deeper than what the scorer kept (``RunSettings.depth``) only see the kept documents;
  :func:`~retrieval_eval.evaluation.aggregate.summarise` asks only for the run's own cutoffs.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import repeat
from operator import attrgetter
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

    from retrieval_eval.evaluation.results import QuestionResult

METRICS = ("hit_rate", "recall", "mrr", "ndcg")


@dataclass(frozen=True)
class Judgements:
    """The per-question facts every metric reads, as arrays (built once by :func:`judgements`).

    ``gains[i, j]`` is True when the (j+1)-th distinct document of question i is a target;
    ``first_rank`` is 0 where no target was found.
    """

    has_targets: np.ndarray
    target_count: np.ndarray
    failed: np.ndarray
    empty: np.ndarray
    first_rank: np.ndarray
    gains: np.ndarray


def kept_target_ranks(
    expected: Sequence[str], kept: Sequence[str], first: int | None
) -> tuple[int, ...]:
    """The ranks (1-based) of the targets among the kept documents, given the first target's
    rank over everything fetched: none when that is past what was kept; the others are looked
    for only after it, and only when there are several targets."""
    if first is None or first > len(kept):
        return ()
    if len(expected) < 2:
        return (first,)
    wanted = set(expected)
    return (first, *(j + 1 for j in range(first, len(kept)) if kept[j] in wanted))


def judgements(questions: Sequence[QuestionResult]) -> Judgements:
    """Turn per-question results into arrays; one pass in Python, the metrics then vectorise."""
    import numpy as np

    n = len(questions)
    fields = attrgetter("expected_document_ids", "retrieved", "first_hit_rank", "error")
    expected, retrieved, first, errors = (
        zip(*map(fields, questions), strict=True) if n else ((), (), (), ())
    )
    depth = max(map(len, retrieved), default=0)
    rows: list[int] = []
    cols: list[int] = []
    for i, ranks in enumerate(map(kept_target_ranks, expected, retrieved, first)):
        rows.extend(repeat(i, len(ranks)))
        cols.extend(rank - 1 for rank in ranks)
    gains = np.zeros((n, depth), dtype=bool)
    gains[rows, cols] = True
    target_count = np.fromiter(map(len, expected), dtype=np.int64, count=n)
    return Judgements(
        has_targets=target_count > 0,
        target_count=target_count,
        failed=np.fromiter((e is not None for e in errors), dtype=bool, count=n),
        empty=np.fromiter(map(len, retrieved), dtype=np.int64, count=n) == 0,
        first_rank=np.fromiter((r or 0 for r in first), dtype=np.int64, count=n),
        gains=gains,
    )


def hit_rate(j: Judgements, k: int) -> np.ndarray:
    """1.0 when a target is among the first ``k`` distinct documents, else 0.0.

    A no-result question is a hit only when nothing came back; an errored question never hits.
    ``hit_rate@1`` and ``hit_rate@3`` equal the primary top-1 and top-3 hit rates.
    """
    import numpy as np

    found = (j.first_rank >= 1) & (j.first_rank <= k)
    hits = np.where(j.has_targets, found, j.empty) & ~j.failed
    return hits.astype(float)


def recall(j: Judgements, k: int) -> np.ndarray:
    """Share of the question's targets among its first ``k`` distinct documents (NaN: no targets)."""
    import numpy as np

    found = j.gains[:, :k].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        values = found / j.target_count
    return np.where(j.has_targets, values, np.nan)


def reciprocal_rank(j: Judgements) -> np.ndarray:
    """1 / rank of the first target among the distinct fetched documents; 0 when none (NaN: no targets)."""
    import numpy as np

    with np.errstate(divide="ignore"):
        values = np.where(j.first_rank > 0, 1.0 / np.maximum(j.first_rank, 1), 0.0)
    return np.where(j.has_targets, values, np.nan)


def ndcg(j: Judgements, k: int) -> np.ndarray:
    """nDCG@k with binary gains: DCG of the first ``k`` distinct documents over the ideal DCG."""
    import numpy as np

    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    width = min(k, j.gains.shape[1])
    dcg = j.gains[:, :width] @ discounts[:width]
    ideal = np.concatenate(([0.0], np.cumsum(discounts)))[np.minimum(j.target_count, k)]
    with np.errstate(invalid="ignore", divide="ignore"):
        values = dcg / ideal
    return np.where(j.has_targets, values, np.nan)


def metric_names(cutoffs: Iterable[int]) -> list[str]:
    """The names :func:`compute` produces, in report order: ``hit_rate@1 ... mrr ... ndcg@10``."""
    ks = sorted(set(cutoffs))
    return [
        *(f"hit_rate@{k}" for k in ks),
        *(f"recall@{k}" for k in ks),
        "mrr",
        *(f"ndcg@{k}" for k in ks),
    ]


def _values(j: Judgements, name: str) -> np.ndarray:
    if name == "mrr":
        return reciprocal_rank(j)
    metric, _, k = name.partition("@")
    function = {"hit_rate": hit_rate, "recall": recall, "ndcg": ndcg}[metric]
    return function(j, int(k))


def values(questions: Sequence[QuestionResult], cutoffs: Iterable[int]) -> dict[str, np.ndarray]:
    """Every metric's per-question values, in report order (NaN where a question does not count)."""
    j = judgements(questions)
    return {name: _values(j, name) for name in metric_names(cutoffs)}


def per_question(questions: Sequence[QuestionResult], cutoffs: Iterable[int]) -> pd.DataFrame:
    """Every metric per question (index: question id); NaN where a question does not count."""
    import pandas as pd  # here only: a run's figures (compute) need numpy, not ~0.2 s of pandas

    columns = values(questions, cutoffs)
    frame = pd.DataFrame(columns, columns=list(columns))
    frame.index = pd.Index([question.id for question in questions], name="id")
    return frame


def mean(values: np.ndarray) -> float | None:
    """Mean over the questions that count (non-NaN); ``None`` when none does."""
    import numpy as np

    counted = values[~np.isnan(values)]
    return float(counted.mean()) if counted.size else None


def compute(questions: Sequence[QuestionResult], cutoffs: Iterable[int]) -> dict[str, float | None]:
    """The run-level figures: each metric's mean over the questions that count.

    Exact, and without numpy (a run's process need not import it: ~0.1 s of a CLI run): the
    questions are counted by what their values depend on (failed, number of targets, nothing
    kept, first rank, the ranks of the targets kept), each metric is computed once per
    distinct kind with the same operations as the per-question functions above, and the mean
    is the exactly rounded mean of those values (``Fraction``s). numpy's pairwise sum of the
    same values may differ in the last bit; the hit rates are the same bits (exact sums of
    ones). ``tests/evaluation/test_metrics.py`` compares both on random runs.
    """
    ks = sorted(set(cutoffs))
    kinds = _kinds(questions)
    figures: dict[str, float | None] = {}
    for k in ks:
        figures[f"hit_rate@{k}"] = _mean((_hit(kind, k), n) for kind, n in kinds.items())
    targeted = [(kind, n) for kind, n in kinds.items() if kind[1]]
    for k in ks:
        figures[f"recall@{k}"] = _mean((_found(kind, k) / kind[1], n) for kind, n in targeted)
    figures["mrr"] = _mean(((1.0 / kind[3] if kind[3] else 0.0), n) for kind, n in targeted)
    for k in ks:
        figures[f"ndcg@{k}"] = _mean((_ndcg(kind, k), n) for kind, n in targeted)
    return {name: figures[name] for name in metric_names(ks)}


Kind = tuple[bool, int, bool, int, tuple[int, ...]]


def _kinds(questions: Sequence[QuestionResult]) -> Counter[Kind]:
    """Questions counted by (failed, targets, nothing kept, first rank or 0, ranks of the targets
    among the kept documents): every metric of a question is a function of these."""
    fields = attrgetter("expected_document_ids", "retrieved", "first_hit_rank", "error")
    kinds: Counter[Kind] = Counter()
    for expected, kept, first, error in map(fields, questions):
        ranks = kept_target_ranks(expected, kept, first)
        kinds[(error is not None, len(expected), not kept, first or 0, ranks)] += 1
    return kinds


def _hit(kind: Kind, k: int) -> float:
    failed, targets, empty, first, _ = kind
    if failed:
        return 0.0
    return float(1 <= first <= k) if targets else float(empty)


def _found(kind: Kind, k: int) -> int:
    return sum(rank <= k for rank in kind[4])


def _ndcg(kind: Kind, k: int) -> float:
    discounts = [1.0 / math.log2(rank + 1) for rank in range(1, k + 1)]
    dcg = sum(discounts[rank - 1] for rank in kind[4] if rank <= k)
    return dcg / sum(discounts[: min(kind[1], k)])


def _mean(values: Iterable[tuple[float, int]]) -> float | None:
    """The exactly rounded mean of each value repeated its count of times; None for none."""
    total, count = Fraction(0), 0
    for value, n in values:
        total += Fraction(value) * n
        count += n
    return float(total / count) if count else None

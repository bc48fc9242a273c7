"""Secondary metrics over DISTINCT documents: hit_rate@k, recall@k, MRR and nDCG@k.

Each metric is a function of :class:`Judgements` returning per-question values (a float array in
question order, ``NaN`` where the question does not count), as ranx does; :func:`compute` gives a
run's figures (``RunResult.metrics``) as their means over the questions that count, and
:func:`per_question` gives the values as a DataFrame. They read what the scorer keeps per
question (:class:`~retrieval_eval.evaluation.results.QuestionResult`): ``retrieved``,
``first_hit_rank``, ``expected_document_ids`` and ``error``.

- Distinct documents: an id counts once, at its FIRST occurrence (trec_eval and ranx: its last).
- Empty target set: ``hit_rate@k`` is a hit only when nothing came back. recall, MRR and nDCG
  count a question that has judgments (a document graded, even 0) as trec_eval does (its
  ``num_q``): recall and MRR 0, nDCG its DCG over its ideal DCG (0 when that is 0, as at
  ``relevance_level`` 2 a question judged 1 keeps its nDCG); a question nobody judged: NaN.
- Missing ranking (the call failed): 0 in every metric, also for an empty target set.
- MRR: 1 / rank of the first target in the fetch (``depth × overfetch_multiplier`` ids), else 0.
- Targets are the documents graded at least the run's ``relevance_level`` (1 by default; an
  ungraded target is grade 1): hit rates, recall and MRR count them alone.
- nDCG (trec_eval's ``ndcg_cut`` convention): the gain is the grade (0 for a document nobody
  judged or judged 0), the discount 1/log2(rank + 1), the ideal DCG that of the question's judged
  grades sorted best first; ungraded, every target's gain is 1 (``min(k, targets)`` of them).
- A cutoff deeper than ``RunSettings.depth`` sees only the kept documents.
- A mean over no counting question is ``None``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from retrieval_eval.evaluation.results import QuestionResult


@dataclass(frozen=True)
class Judgements:
    """The per-question facts every metric reads, as arrays (built once by :func:`judgements`).

    ``gains[i, j]`` is True when the (j+1)-th distinct document of question i is a target;
    ``first_rank`` is 0 where no target was found. ``judged`` is True where the question has a
    judged document (a target, or a grade even 0): recall, MRR and nDCG count it. ``graded`` is
    None when no question gives grades, else ``(grade of each kept document, judged grades best
    first)``: nDCG's gains.
    """

    has_targets: np.ndarray
    judged: np.ndarray
    target_count: np.ndarray
    failed: np.ndarray
    empty: np.ndarray
    first_rank: np.ndarray
    gains: np.ndarray
    graded: tuple[np.ndarray, np.ndarray] | None = None


def judgements(questions: Sequence[QuestionResult]) -> Judgements:
    """Turn per-question results into arrays: one C-level pass over their fields, then numpy.

    The first target's rank places it among the kept documents for every question at once;
    only a question with several targets whose first one was kept before its last kept document
    is looked at in Python, for the targets after it.
    """
    n = len(questions)
    fields = attrgetter("expected_document_ids", "retrieved", "first_hit_rank", "error", "grades")
    expected, retrieved, first, errors, grades = (
        zip(*map(fields, questions), strict=True) if n else ((), (), (), (), ())
    )
    kept = np.fromiter(map(len, retrieved), dtype=np.int64, count=n)
    target_count = np.fromiter(map(len, expected), dtype=np.int64, count=n)
    first_rank = np.fromiter((r or 0 for r in first), dtype=np.int64, count=n)
    gains = np.zeros((n, int(kept.max(initial=0))), dtype=bool)
    found = np.flatnonzero((first_rank >= 1) & (first_rank <= kept))
    gains[found, first_rank[found] - 1] = True
    for i in np.flatnonzero((target_count > 1) & (first_rank >= 1) & (first_rank < kept)).tolist():
        wanted, row = set(expected[i]), retrieved[i]
        for j in range(first[i], len(row)):
            gains[i, j] = row[j] in wanted
    return Judgements(
        has_targets=target_count > 0,
        judged=(target_count > 0) | np.fromiter(map(bool, grades), dtype=bool, count=n),
        target_count=target_count,
        failed=np.fromiter((e is not None for e in errors), dtype=bool, count=n),
        empty=kept == 0,
        first_rank=first_rank,
        gains=gains,
        graded=_graded_gains(expected, retrieved, grades, gains.shape[1]) if any(grades) else None,
    )


def _graded_gains(
    expected: Sequence[Sequence[str]],
    retrieved: Sequence[Sequence[str]],
    grades: Sequence[dict[str, int] | None],
    depth: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Each kept document's gain (its grade; 1 for a target of an ungraded question) and each
    question's ideal gains (its judged grades, best first), as nDCG reads them."""
    judged = [
        g if g is not None else dict.fromkeys(e, 1) for e, g in zip(expected, grades, strict=True)
    ]
    gains = np.zeros((len(judged), depth))
    ideal = np.zeros((len(judged), max(map(len, judged), default=0)))
    for i, (kept, graded) in enumerate(zip(retrieved, judged, strict=True)):
        gains[i, : len(kept)] = [graded.get(doc_id, 0) for doc_id in kept]
        best = sorted(graded.values(), reverse=True)
        ideal[i, : len(best)] = best
    return gains, ideal


def hit_rate(j: Judgements, k: int) -> np.ndarray:
    """1.0 when a target is among the first ``k`` distinct documents, else 0.0.

    A no-result question is a hit only when nothing came back; an errored question never hits.
    ``hit_rate@1`` and ``hit_rate@3`` equal the primary top-1 and top-3 hit rates.
    """
    found = (j.first_rank >= 1) & (j.first_rank <= k)
    hits = np.where(j.has_targets, found, j.empty) & ~j.failed
    return hits.astype(float)


def recall(j: Judgements, k: int) -> np.ndarray:
    """Share of the question's targets among its first ``k`` distinct documents; 0 for a judged
    question without targets (NaN: nothing judged)."""
    found = j.gains[:, :k].sum(axis=1)
    values = found / np.maximum(j.target_count, 1)
    return np.where(j.judged, values, np.nan)


def reciprocal_rank(j: Judgements) -> np.ndarray:
    """1 / rank of the first target among the distinct fetched documents; 0 when none, also for a
    judged question without targets (NaN: nothing judged)."""
    values = 1.0 / np.where(j.first_rank > 0, j.first_rank, np.inf)
    return np.where(j.judged, values, np.nan)


def ndcg(j: Judgements, k: int) -> np.ndarray:
    """nDCG@k: DCG of the first ``k`` distinct documents over the ideal DCG, 0 when that is 0;
    the grades are the gains when the set gives grades, else every target's gain is 1 (NaN:
    nothing judged)."""
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    if j.graded is not None:
        gains, best = j.graded
        width, ideal_width = min(k, gains.shape[1]), min(k, best.shape[1])
        dcg = gains[:, :width] @ discounts[:width]
        ideal = best[:, :ideal_width] @ discounts[:ideal_width]
    else:
        width = min(k, j.gains.shape[1])
        dcg = j.gains[:, :width] @ discounts[:width]
        ideal = np.concatenate(([0.0], np.cumsum(discounts)))[np.minimum(j.target_count, k)]
    values = np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)
    return np.where(j.judged, values, np.nan)


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
    import pandas as pd  # only here: a run's figures do not need pandas

    columns = values(questions, cutoffs)
    frame = pd.DataFrame(columns, columns=list(columns))
    frame.index = pd.Index([question.id for question in questions], name="id")
    return frame


def mean(values: np.ndarray) -> float | None:
    """Mean over the questions that count (non-NaN); ``None`` when none does."""
    counted = values[~np.isnan(values)]
    return float(counted.mean()) if counted.size else None


def compute(questions: Sequence[QuestionResult], cutoffs: Iterable[int]) -> dict[str, float | None]:
    """The run's figures, in report order: each metric's mean over the questions that count."""
    return {name: mean(column) for name, column in values(questions, cutoffs).items()}

"""Figures that carry a model judge's error: holes split by who judged, and three hit rates.

A judgment whose ``rater`` starts with ``judge:`` (``judge:<name>``) was made by a model judge;
any other rater is a person. :func:`judge_figures` takes a run and a set's stored judgments and,
only when some are a machine's, gives:

- **holes split** at ``depth`` (default 10, as the holes figure): the run's top places judged
  by people (the set's labels, grade 0 included, and people's judgments, by
  :mod:`retrieval_eval.labels.judged`'s rule), judged by a machine only, and unjudged.
- **three hit rates** per gated depth ``k``, each with its ``1 - alpha`` interval:

  - ``human``: the hit rate on the *calibration* questions: those people graded (a judgment
    row of a person, not only the set's labels: a question whose target is at rank 1 is judged
    whole by its labels alone, and counting it would favour hits) and whose whole top ``k``
    people judged, so their hit is known exactly: unbiased, wide (Wilson over them);
  - ``human_machine``: every question, people's labels where they judged and the machine's
    where only it did: narrow, but as biased as the judge (Wilson over every question);
  - ``ppi``: prediction-powered (:mod:`retrieval_eval.evaluation.ppi`): the machine's hits
    (its grade wherever it graded, people's labels elsewhere) on every other question, corrected
    by the machine's error measured on the calibration questions. Valid when the calibration
    questions are a random sample of the set (grade whole questions picked at random, not the
    review queue's most valuable pairs, to calibrate); None with fewer than
    :data:`MIN_CALIBRATION` of them (the normal approximation would claim a certainty it has
    not: a few agreeing questions give an interval of width 0), or none outside.

A pair's grade from several raters of one kind is their merged grade
(:func:`retrieval_eval.labels.agreement.merged_grade`); relevant is a grade at or above the
run's relevance level. A question that errored is a miss under every labelling.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

# who is a model judge is decided once, in labels.judged (re-exported here for the figures)
from retrieval_eval.labels.judged import MACHINE_PREFIX as MACHINE_PREFIX
from retrieval_eval.labels.judged import Pair, is_machine, judged_pairs

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import QuestionResult, RunResult
    from retrieval_eval.labels.judgments import Judgment

DEPTH = 10  # the holes figure's depth, as labels.pooling.DEPTH
MIN_CALIBRATION = 10  # questions judged whole by people before a prediction-powered rate


@dataclass(frozen=True, slots=True)
class JudgedSplit:
    """Who judged a run's top ``depth`` places: people, a machine only, or nobody."""

    depth: int
    slots: int
    human: int
    machine: int
    unjudged: int

    def shares(self) -> dict[str, float | None]:
        def share(count: int) -> float | None:
            return count / self.slots if self.slots else None

        return {
            "human": share(self.human),
            "machine": share(self.machine),
            "unjudged": share(self.unjudged),
        }


@dataclass(frozen=True, slots=True)
class Rate:
    """A hit rate, its interval and the questions it stands on."""

    rate: float
    low: float
    high: float
    questions: int


@dataclass(frozen=True, slots=True)
class DepthRates:
    """The three hit rates at one depth (see the module)."""

    depth: int
    calibration_questions: int
    human: Rate | None
    human_machine: Rate | None
    ppi: Rate | None
    ppi_lambda: float | None


@dataclass(frozen=True, slots=True)
class JudgeFigures:
    """What a run's figures look like once a machine has judged some of its pairs."""

    machine_raters: list[str]
    alpha: float
    holes: JudgedSplit
    rates: list[DepthRates]

    @property
    def confidence(self) -> float:
        return 1 - self.alpha

    def contract(self) -> dict[str, object]:
        """The JSON document of these figures (the run report's ``judge_figures`` key)."""

        def rate(r: Rate | None) -> dict[str, object] | None:
            return None if r is None else {
                "rate": r.rate, "ci": [r.low, r.high], "questions": r.questions,
            }  # fmt: skip

        return {
            "machine_raters": self.machine_raters,
            "confidence": self.confidence,
            "holes": {
                "depth": self.holes.depth,
                "slots": self.holes.slots,
                "human_judged": self.holes.human,
                "machine_judged": self.holes.machine,
                "unjudged": self.holes.unjudged,
                "shares": self.holes.shares(),
            },
            "hit_rates": {
                f"top{d.depth}": {
                    "calibration_questions": d.calibration_questions,
                    "human": rate(d.human),
                    "human_machine": rate(d.human_machine),
                    "ppi": rate(d.ppi),
                    "ppi_lambda": d.ppi_lambda,
                }
                for d in self.rates
            },
        }


def _merged(rows: Iterable[Judgment]) -> dict[Pair, int]:
    from retrieval_eval.labels.judgments import summarise

    return summarise(list(rows)).merged


def judged_split(
    result: RunResult, judgments: Iterable[Judgment], depth: int = DEPTH
) -> JudgedSplit:
    """The run's top ``depth`` (or the shallower depth it kept) split by who judged each place."""
    rows = list(judgments)
    kept = min(depth, result.settings.depth)
    human = judged_pairs(
        questions=result.questions, rows=[r for r in rows if not is_machine(r.rater)]
    )
    machine = judged_pairs(rows=[r for r in rows if is_machine(r.rater)])
    slots = by_human = by_machine = 0
    for q in result.questions:
        for doc in q.retrieved[:kept]:
            slots += 1
            if (q.id, doc) in human:
                by_human += 1
            elif (q.id, doc) in machine:
                by_machine += 1
    return JudgedSplit(kept, slots, by_human, by_machine, slots - by_human - by_machine)


def judge_figures(
    result: RunResult,
    judgments: Sequence[Judgment],
    *,
    depth: int = DEPTH,
    alpha: float = 0.05,
    min_calibration: int = MIN_CALIBRATION,
) -> JudgeFigures | None:
    """The holes split and the three hit rates of ``result`` (see the module), or None when no
    judgment of ``judgments`` is a machine's (nothing to report beyond the run's own figures)."""
    machine_rows = [r for r in judgments if is_machine(r.rater) and r.grade is not None]
    if not machine_rows:
        return None
    human_rows = [r for r in judgments if not is_machine(r.rater)]
    level = result.settings.relevance_level
    human_grades = _merged(human_rows)
    machine_grades = _merged(machine_rows)
    human_judged = judged_pairs(questions=result.questions, rows=human_rows)
    graded = {r.question_key for r in human_rows if r.grade is not None}
    rates = [
        _rates_at(
            result.questions,
            k,
            level,
            (human_grades, machine_grades),
            (human_judged, graded),
            alpha,
            max(2, min_calibration),
        )
        for k in result.depths
    ]
    return JudgeFigures(
        machine_raters=sorted({r.rater for r in machine_rows if r.rater is not None}),
        alpha=alpha,
        holes=judged_split(result, judgments, depth),
        rates=rates,
    )


def _rates_at(
    questions: Sequence[QuestionResult],
    k: int,
    level: int,
    grades: tuple[dict[Pair, int], dict[Pair, int]],
    judged: tuple[set[Pair], set[str]],
    alpha: float,
    min_calibration: int,
) -> DepthRates:
    import numpy as np

    from retrieval_eval.evaluation.intervals import wilson
    from retrieval_eval.evaluation.ppi import ppi_mean, z_value

    y: list[float] = []  # people's hit, calibration questions
    yhat: list[float] = []  # the machine's hit on them
    yhat_other: list[float] = []  # the machine's hit on every other question
    combined = 0  # hits under people's labels, the machine's where only it judged
    human_grades, machine_grades = grades
    human_judged, graded = judged
    for q in questions:
        top = [] if q.error is not None else q.retrieved[:k]
        targets = set(q.expected_document_ids)

        def human(doc: str, qid: str = q.id, targets: set[str] = targets) -> bool:
            grade = human_grades.get((qid, doc))
            return doc in targets or (grade is not None and grade >= level)

        def machine_first(doc: str, qid: str = q.id) -> bool:
            grade = machine_grades.get((qid, doc))
            return grade >= level if grade is not None else human(doc)

        def human_first(doc: str, qid: str = q.id) -> bool:
            if (qid, doc) in human_judged:
                return human(doc)
            grade = machine_grades.get((qid, doc))
            return grade is not None and grade >= level

        if q.error is None and not q.expected_document_ids and not q.grades:
            hit = q.hit_at(k)  # a question that expects nothing: a hit when nothing came back
            y_q = yhat_q = combined_q = hit
        else:
            y_q = any(human(d) for d in top)
            yhat_q = any(machine_first(d) for d in top)
            combined_q = any(human_first(d) for d in top)
        combined += combined_q
        if q.id in graded and all((q.id, d) in human_judged for d in top):
            y.append(float(y_q))
            yhat.append(float(yhat_q))
        else:
            yhat_other.append(float(yhat_q))
    total = len(questions)

    def wilson_rate(hits: int, n: int) -> Rate | None:
        ci = wilson(hits, n, z_value(alpha))
        return None if ci is None else Rate(hits / n, ci[0], ci[1], n)

    ppi = lam = None
    if len(y) >= min_calibration and yhat_other:
        found = ppi_mean(np.array(y), np.array(yhat), np.array(yhat_other), alpha=alpha)
        lam = float(found.lam)
        ppi = Rate(float(found.estimate), float(found.low), float(found.high), total)
    return DepthRates(
        depth=k,
        calibration_questions=len(y),
        human=wilson_rate(int(sum(y)), len(y)),
        human_machine=wilson_rate(combined, total),
        ppi=ppi,
        ppi_lambda=lam,
    )

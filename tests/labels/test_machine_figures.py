"""Figures that carry a judge's error: holes split by who judged, and the three hit rates."""

from __future__ import annotations

import pytest

from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.evaluation.ppi import ppi_mean
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.labels.machine import is_machine, judge_figures, judged_split
from retrieval_eval.retrievers.base import FunctionRetriever

RANKINGS = {
    "q1": ["a", "x"],  # hit on its target: people judged a, the machine x
    "q2": ["y", "b"],  # people graded y relevant; the judge says not
    "q3": ["z", "w"],  # the judge says z relevant; nobody else judged q3's places
    "q4": ["v", "u"],  # people graded both not relevant; the judge calls v relevant
    "q5": ["t"],  # nobody judged t
}


def run():  # type: ignore[no-untyped-def]
    golden = GoldenQuestionSet(
        identifier="tiny",
        questions=[
            GoldenQuestion(id=f"q{i}", question=f"question {i}", form="match",
                           expected_document_ids=(target,))
            for i, target in enumerate(["a", "b", "c", "d", "e"], start=1)
        ],
    )  # fmt: skip
    retriever = FunctionRetriever(lambda text, k: RANKINGS["q" + text.split()[-1]][:k], "fn")
    return evaluate(golden, retriever)


def row(q: str, doc: str, grade: int | None, rater: str) -> Judgment:
    return Judgment(question_id=q, document_id=doc, grade=grade, rater=rater)


JUDGMENTS = [
    row("q1", "x", 0, "ann"),
    row("q1", "x", 1, "judge:umbrela"),
    row("q1", "a", 2, "judge:umbrela"),
    row("q2", "y", 2, "ann"),
    row("q2", "y", 0, "judge:umbrela"),
    row("q3", "z", 3, "judge:umbrela"),
    row("q4", "v", 0, "bob"),
    row("q4", "u", 0, "bob"),
    row("q4", "v", 2, "judge:umbrela"),
    row("q5", "t", None, "judge:umbrela"),  # unreadable: no grade, judges nothing
]


def test_machine_raters_are_judge_prefixed() -> None:
    assert is_machine("judge:umbrela") and not is_machine("ann") and not is_machine(None)
    assert not is_machine("judges-team")


def test_without_machine_judgments_there_is_nothing_to_report() -> None:
    assert judge_figures(run(), [r for r in JUDGMENTS if not is_machine(r.rater)]) is None
    assert judge_figures(run(), []) is None


def test_holes_split_by_who_judged() -> None:
    split = judged_split(run(), JUDGMENTS, depth=10)
    # 9 places: people judged a, x, y (and b as q2's target), v, u; the machine alone z
    assert (split.slots, split.human, split.machine, split.unjudged) == (9, 6, 1, 2)
    assert split.shares()["unjudged"] == pytest.approx(2 / 9)


def test_three_hit_rates_at_top_3() -> None:
    figures = judge_figures(run(), JUDGMENTS, min_calibration=2)
    assert figures is not None and figures.machine_raters == ["judge:umbrela"]
    top3 = next(d for d in figures.rates if d.depth == 3)  # rankings hold 2
    # calibration: q1 (a target, x graded), q2 (y graded, b its target), q4 (v, u graded)
    assert top3.calibration_questions == 3
    # people: q1 hit, q2 hit, q4 miss
    assert top3.human is not None and top3.human.rate == pytest.approx(2 / 3)
    assert (top3.human.low, top3.human.high) == pytest.approx(wilson(2, 3))
    # people first, the machine where only it judged: q1, q2, q3 (z) hit; q4, q5 miss
    assert top3.human_machine is not None and top3.human_machine.rate == pytest.approx(3 / 5)
    # the machine first: q1 hit, q2 hit (b, its target, the machine never graded), q4 hit (v)
    expected = ppi_mean([1, 1, 0], [1, 1, 1], [1, 0], alpha=0.05)
    assert top3.ppi is not None
    assert top3.ppi.rate == pytest.approx(float(expected.estimate))
    assert (top3.ppi.low, top3.ppi.high) == pytest.approx(
        (float(expected.low), float(expected.high))
    )
    document = figures.contract()
    assert document["holes"]["machine_judged"] == 1  # type: ignore[index]
    assert set(document["hit_rates"]["top3"]) == {  # type: ignore[index]
        "calibration_questions", "human", "human_machine", "ppi", "ppi_lambda",
    }  # fmt: skip


def test_questions_judged_whole_by_the_sets_labels_alone_do_not_calibrate() -> None:
    """q1's top 1 is its target: judged whole by the set, a hit; counting such questions would
    favour hits. Only questions a person graded calibrate, and the prediction-powered rate
    waits for enough of them."""
    rows = [r for r in JUDGMENTS if r.rater != "ann"]  # people graded q4 only
    figures = judge_figures(run(), rows)
    assert figures is not None
    top1 = next(d for d in figures.rates if d.depth == 1)
    assert top1.calibration_questions == 1  # q4 (v judged by bob); not q1
    assert top1.human is not None and top1.human.rate == 0.0
    assert top1.ppi is None  # fewer than MIN_CALIBRATION

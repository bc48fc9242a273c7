"""Hits, rates and Wilson intervals at every gated depth, overall and per slice, from the real
scorer: what ``depths: [1, 5]`` or ``[1, 3, 5, 10]`` adds, and what the default leaves as it was."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from retrieval_eval.evaluation.intervals import wilson
from retrieval_eval.evaluation.metrics import compute
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate, score_questions
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever

# each question's target sits at this rank of the ranking the retriever returns (None: absent)
RANKS = {"r1": 1, "r2": 2, "r4": 4, "r5": 5, "r7": 7, "r10": 10, "never": None}


def _question(qid: str, form: str = "match", hard: str | None = None) -> GoldenQuestion:
    return GoldenQuestion(
        id=qid, question=qid, form=form, expected_document_ids=(f"{qid}-target",), hard_class=hard
    )


QUESTIONS = [
    _question("r1", "match", "easy"),
    _question("r2", "match", "easy"),
    _question("r4", "gap", "easy"),
    _question("r5", "gap", "hard"),
    _question("r7", "gap", "hard"),
    _question("r10", "match", "hard"),
    _question("never", "gap", "hard"),
    GoldenQuestion(id="empty", question="empty", form="gap", expected_document_ids=()),
    _question("fails", "match"),
]
SET = GoldenQuestionSet(identifier="depths.demo", questions=QUESTIONS)


def _ranking(question: str, limit: int) -> list[str]:
    if question == "fails":
        raise RuntimeError("index offline")
    if question == "empty":
        return []
    ranking = [f"filler-{i}" for i in range(1, limit + 1)]
    rank = RANKS[question]
    if rank is not None:
        ranking[rank - 1] = f"{question}-target"
    return ranking


def _run(depths: Sequence[int], **settings: object):
    retriever = FunctionRetriever(_ranking, identifier="ranks")
    return evaluate(
        SET, retriever, RunSettings(depths=list(depths), max_error_rate=1.0, **settings)
    )


def test_the_retriever_is_asked_for_the_deepest_depth_and_it_is_kept() -> None:
    limits: list[int] = []

    def recording(question: str, limit: int) -> list[str]:
        limits.append(limit)
        return _ranking(question, limit)

    retriever = FunctionRetriever(recording, identifier="rec")
    results = score_questions(QUESTIONS[:1], retriever, RunSettings(depths=[1, 5]))
    assert limits == [20] and len(results[0].retrieved) == 5
    score_questions(QUESTIONS[:1], retriever, RunSettings(depths=[1, 3, 5, 10]))
    assert limits[-1] == 40


def test_hits_at_each_depth_follow_the_scoring_rules() -> None:
    result = _run([1, 3, 5, 10])
    by_id = {q.id: q for q in result.questions}
    hits = {qid: [by_id[qid].hit_at(d) for d in (1, 3, 5, 10)] for qid in by_id}
    assert hits == {
        "r1": [True, True, True, True],
        "r2": [False, True, True, True],
        "r4": [False, False, True, True],
        "r5": [False, False, True, True],
        "r7": [False, False, False, True],
        "r10": [False, False, False, True],
        "never": [False, False, False, False],
        "empty": [True, True, True, True],  # nothing came back: a hit at every depth
        "fails": [False, False, False, False],  # an error is a miss at every depth
    }
    assert result.hits_at == {1: 2, 3: 3, 5: 5, 10: 7}
    assert (result.hits(1), result.hits(3)) == (result.top1_hits, result.top3_hits)


def test_rates_and_wilson_intervals_per_depth_overall_and_per_slice() -> None:
    result = _run([1, 5])
    n = result.question_count
    assert result.hits_at == {1: 2, 5: 5}
    assert result.hit_rate(5) == pytest.approx(5 / n)
    assert result.hit_rate_ci(5) == wilson(5, n)
    # the gated rates are the secondary metric of the same name: one definition of a hit
    assert compute(result.questions, [5])["hit_rate@5"] == pytest.approx(result.hit_rate(5))
    gap, match = result.by_form["gap"], result.by_form["match"]
    assert (gap.questions, gap.hits_at) == (5, {1: 1, 5: 3})  # empty, r4, r5
    assert (match.questions, match.hits_at) == (4, {1: 1, 5: 2})  # r1, r2
    assert gap.hit_rate_ci(5) == wilson(3, 5)
    assert result.by_hard_class["hard"].hits_at == {1: 0, 5: 1}
    assert result.by_hard_class["easy"].hit_rate(5) == 1.0


def test_the_json_contract_adds_keys_for_depths_beyond_top1_and_top3() -> None:
    deep = _run([1, 3, 5, 10]).contract()
    assert deep["depths"] == [1, 3, 5, 10]
    assert (deep["top5_hits"], deep["top10_hits"]) == (5, 7)
    assert deep["top10_hit_rate"] == pytest.approx(7 / 9)
    assert deep["top10_hit_rate_ci"] == list(wilson(7, 9) or ())
    gap = deep["by_form"]["gap"]
    assert gap["top5_hit_rate"] == pytest.approx(3 / 5) and gap["top5_hit_rate_ci"]
    by_id = {q["id"]: q for q in deep["questions"]}
    assert (by_id["r7"]["top5_hit"], by_id["r7"]["top10_hit"]) == (False, True)
    assert "top3_hit" in by_id["r7"]  # the seed's keys stay
    frame = _run([1, 5]).to_frame()
    assert frame.set_index("id")["top5_hit"].to_dict()["r4"] is True


def test_the_default_contract_is_the_seed_one() -> None:
    plain = _run([1, 3]).contract()
    assert plain["depths"] == [1, 3]
    assert not [key for key in plain if key.startswith(("top5", "top10"))]
    assert set(plain["by_form"]["gap"]) == {
        "questions", "top1_hit_rate", "top3_hit_rate", "top1_hit_rate_ci", "top3_hit_rate_ci",
    }  # fmt: skip
    assert "top5_hit" not in plain["questions"][0]

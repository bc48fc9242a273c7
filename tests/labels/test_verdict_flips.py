"""Which pairs' grades would flip a verdict (labels.pooling.verdict_flips): a document in a
run's top k at a gated depth k where no target is, so its grade decides the hit at k."""

from __future__ import annotations

from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.pooling import verdict_flips

GOLDEN = GoldenQuestionSet(
    identifier="tiny",
    questions=[
        GoldenQuestion(id="hit1", question="one", form="match", expected_document_ids=("t",)),
        GoldenQuestion(id="hit3", question="two", form="match", expected_document_ids=("t",)),
        GoldenQuestion(id="miss", question="three", form="match", expected_document_ids=("t",)),
        GoldenQuestion(id="none", question="four", form="match", expected_document_ids=()),
        GoldenQuestion(id="short", question="five", form="match", expected_document_ids=("t",)),
        GoldenQuestion(id="graded", question="six", form="match", grades={"g": 2, "w": 1}),
    ],
)
RANKINGS = {
    "a": {
        "hit1": ["t", "x", "y"],  # a hit at 1 and 3: no grade flips it
        "hit3": ["x", "y", "t", "z"],  # a miss at 1: x decides top-1; a hit at 3 whatever y is
        "miss": ["x", "y", "z", "u"],  # a miss at 1 and 3: x, y and z decide; u is below 3
        "none": ["x"],  # expects nothing: no one document's grade decides it
        "short": ["x"],  # fewer than 3 fetched, none a target: x decides both depths
        "graded": ["w", "g"],  # w (grade 1) is no target at level 2: it decides top-1
    },
    "b": {"hit1": ["y", "t"]},  # another run: y sits above hit1's target at its top-1
}


def test_documents_above_the_first_target_at_a_gated_depth() -> None:
    found = verdict_flips(GOLDEN, RANKINGS, {"a": [1, 3], "b": [1]})
    assert found == {
        ("hit3", "x"),
        ("miss", "x"), ("miss", "y"), ("miss", "z"),
        ("short", "x"),
        ("hit1", "y"),
    }  # fmt: skip


def test_only_gated_depths_count_and_the_level_sets_the_targets() -> None:
    # gating top-3 only: hit3 is a hit there, so x no longer decides anything
    assert ("hit3", "x") not in verdict_flips(GOLDEN, RANKINGS, {"a": [3]})
    assert verdict_flips(GOLDEN, RANKINGS, {"a": [1]}, level=2) >= {("graded", "w")}
    assert ("graded", "w") not in verdict_flips(GOLDEN, RANKINGS, {"a": [1]}, level=1)
    assert verdict_flips(GOLDEN, RANKINGS, {}) == set()  # no gated depth, nothing decides

"""Secondary metrics, each rule on hand-made rankings; and the bulk scoring path they sit on."""

from __future__ import annotations

import gc
import json
import math
import random
import threading
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pytest
from pydantic import ValidationError

from retrieval_eval.config.models import load_config
from retrieval_eval.evaluation import metrics
from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.results import (
    _FRAME_COLUMNS,
    QuestionResult,
    RunSettings,
    questions_frame,
)
from retrieval_eval.evaluation.scoring import evaluate, score_many, score_question
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.retrievers.ranking import collapse
from retrieval_eval.safety.collector import paused_gc, young_collections_only
from retrieval_eval.workflows.labelled_run import run_evaluation

L2, L3, L4, L5 = (math.log2(n) for n in (2, 3, 4, 5))


def q(qid: str, targets: Sequence[str] = (), form: str = "match") -> GoldenQuestion:
    return GoldenQuestion(
        id=qid, question=f"text of {qid}", form=form, expected_document_ids=list(targets)
    )


def scored(
    cases: list[tuple[Sequence[str], Sequence[str] | Exception]], cutoffs: Sequence[int]
) -> list[QuestionResult]:
    """Score (targets, ranking-or-exception) pairs through the real scorer."""
    questions = [q(f"q{i}", targets) for i, (targets, _) in enumerate(cases)]
    answers = {f"text of q{i}": ranking for i, (_, ranking) in enumerate(cases)}

    def retrieve(text: str, limit: int) -> Any:
        answer = answers[text]
        if isinstance(answer, Exception):
            raise answer
        return list(answer)[:limit]

    result = evaluate(
        GoldenQuestionSet(identifier="t.metrics", questions=questions),
        FunctionRetriever(retrieve, identifier="table"),
        RunSettings(cutoffs=list(cutoffs), timeout_s=None, max_error_rate=1.0),
    )
    return result.questions


def values(questions: list[QuestionResult], cutoffs: Sequence[int]) -> dict[str, list[float]]:
    frame = metrics.per_question(questions, cutoffs)
    return {name: frame[name].tolist() for name in frame.columns}


def close(actual: float | None, expected: float) -> bool:
    return actual is not None and math.isclose(actual, expected, abs_tol=1e-12)


# --- each metric on one ranking ------------------------------------------------------------------


def test_every_metric_on_one_hand_made_ranking() -> None:
    # distinct ranking x, a, y, b (the repeated a collapses to rank 2); targets a and b
    [result] = scored([(["a", "b"], ["x", "a", "a", "y", "b"])], [1, 3, 5])
    got = values([result], [1, 3, 5])
    assert got["hit_rate@1"] == [0.0] and got["hit_rate@3"] == [1.0] and got["hit_rate@5"] == [1.0]
    assert got["recall@1"] == [0.0] and got["recall@3"] == [0.5] and got["recall@5"] == [1.0]
    assert got["mrr"] == [0.5]
    ideal = 1 / L2 + 1 / L3
    assert got["ndcg@1"] == [0.0]
    assert math.isclose(got["ndcg@3"][0], (1 / L3) / ideal)
    assert math.isclose(got["ndcg@5"][0], (1 / L3 + 1 / L5) / ideal)


def test_ideal_dcg_is_capped_by_the_cutoff() -> None:
    # five targets, only the first two retrieved: the ideal at k=3 has three targets, not five
    [result] = scored([(["a", "b", "c", "d", "e"], ["a", "b", "x"])], [3])
    [value] = values([result], [3])["ndcg@3"]
    assert math.isclose(value, (1 / L2 + 1 / L3) / (1 / L2 + 1 / L3 + 1 / L4))


def test_duplicates_count_once_at_their_first_occurrence() -> None:
    [result] = scored([(["a"], ["x", "a", "x", "a", "a"])], [3])
    got = values([result], [3])
    assert result.retrieved == ["x", "a"]
    assert got["mrr"] == [0.5]
    assert got["recall@3"] == [1.0]  # never above 1 however often a target repeats
    assert math.isclose(got["ndcg@3"][0], 1 / L3)


def test_empty_ids_are_ignored() -> None:
    [result] = scored([(["a"], ["", "a"])], [1])
    assert values([result], [1])["hit_rate@1"] == [1.0]


# --- no-result questions, errors, empty runs -----------------------------------------------------


def test_no_result_question_counts_in_hit_rate_only() -> None:
    results = scored([([], []), ([], ["x"]), (["a"], ["a"])], [1, 3])
    got = values(results, [1, 3])
    assert got["hit_rate@1"] == [1.0, 0.0, 1.0]  # a hit only when nothing came back
    for name in ("recall@1", "recall@3", "mrr", "ndcg@1", "ndcg@3"):
        assert math.isnan(got[name][0]) and math.isnan(got[name][1]), name
        assert got[name][2] == 1.0, name
    means = metrics.compute(results, [1, 3])
    assert close(means["hit_rate@1"], 2 / 3)
    assert means["recall@3"] == means["mrr"] == means["ndcg@3"] == 1.0  # over 1 question, not 3


def test_a_judged_question_without_a_target_counts_0_in_recall_mrr_and_ndcg() -> None:
    """trec_eval's num_q: a query judged (here grade 0 only) but with no relevant document is
    in the means as 0; at relevance level 2 one judged 1 keeps its nDCG (trec_eval -l2)."""
    judged = GoldenQuestion(id="j", question="j?", form="match", grades={"a": 0, "b": 1})
    plain = q("p", ["b"])
    golden = GoldenQuestionSet(identifier="t.judged", questions=[judged, plain])
    rankings = {"j?": ["a", "b"], "text of p": ["b"]}
    retriever = FunctionRetriever(lambda text, limit: rankings[text][:limit], identifier="r")
    at = {
        level: metrics.per_question(
            evaluate(golden, retriever, RunSettings(cutoffs=[3], relevance_level=level)).questions,
            [3],
        )
        for level in (1, 2)
    }
    assert at[1].loc["j", "mrr"] == 0.5 and at[1].loc["j", "recall@3"] == 1.0
    # level 2: no target at all, yet judged: 0 in recall and MRR, nDCG over its ideal (b, grade 1)
    assert at[2].loc["j", "mrr"] == at[2].loc["j", "recall@3"] == 0.0
    assert at[2].loc["j", "ndcg@3"] == at[1].loc["j", "ndcg@3"] == pytest.approx(1 / L3)
    assert at[2].loc["p", "mrr"] == 0.0 and at[2].loc["p", "ndcg@3"] == 1.0  # an ungraded target
    assert at[2].loc["j", "hit_rate@3"] == 0.0  # hit rates: a no-result question that got ids
    only_zero = GoldenQuestion(id="z", question="j?", form="match", grades={"a": 0})
    zero = metrics.per_question(
        evaluate(
            GoldenQuestionSet(identifier="t.zero", questions=[only_zero]),
            retriever,
            RunSettings(cutoffs=[3]),
        ).questions,
        [3],
    )
    assert zero.loc["z"].tolist() == [0.0, 0.0, 0.0, 0.0]  # ideal DCG 0: nDCG 0, not NaN


def test_errors_score_zero_everywhere_no_result_questions_included() -> None:
    boom = RuntimeError("search is down")
    results = scored([(["a"], boom), ([], boom), (["a"], ["a"])], [1, 3])
    assert [r.error is not None for r in results] == [True, True, False]
    got = values(results, [1, 3])
    assert got["hit_rate@1"] == [0.0, 0.0, 1.0]  # an outage never "correctly finds nothing"
    assert got["recall@3"][0] == got["mrr"][0] == got["ndcg@3"][0] == 0.0
    assert math.isnan(got["recall@3"][1]) and math.isnan(got["mrr"][1])
    means = metrics.compute(results, [1, 3])
    assert close(means["hit_rate@3"], 1 / 3) and close(means["mrr"], 0.5)


def test_means_are_none_when_no_question_counts() -> None:
    only_no_result = scored([([], []), ([], ["x"])], [1])
    means = metrics.compute(only_no_result, [1])
    assert means == {
        "hit_rate@1": 0.5,
        "recall@1": None,
        "mrr": None,
        "ndcg@1": None,
    }
    assert metrics.compute([], [1, 3]) == dict.fromkeys(metrics.metric_names([1, 3]))


def test_mrr_sees_the_whole_fetch_but_no_deeper() -> None:
    # cutoffs 1,3: 12 ids fetched, 3 kept; a first target at distinct rank 7 still counts
    deep = [f"x{i}" for i in range(6)] + ["a"]
    beyond = [f"x{i}" for i in range(12)] + ["a"]  # the target is the 13th id: never fetched
    results = scored([(["a"], deep), (["a"], beyond)], [1, 3])
    assert results[0].first_hit_rank == 7 and results[0].retrieved == ["x0", "x1", "x2"]
    got = values(results, [1, 3])
    assert math.isclose(got["mrr"][0], 1 / 7)
    assert got["mrr"][1] == 0.0
    assert got["recall@3"] == [0.0, 0.0]


# --- what summarise stores ------------------------------------------------------------------------


def test_hit_rate_at_1_and_3_equal_the_primary_rates() -> None:
    cases: list[tuple[Sequence[str], Sequence[str] | Exception]] = [
        (["a"], ["a"]),
        (["a"], ["x", "y", "a"]),
        (["a", "b"], ["x", "b"]),
        ([], []),
        ([], ["x"]),
        (["a"], ValueError("bad")),
        (["a"], ["x", "y", "z", "a"]),
    ]
    questions = scored(cases, [1, 3, 10])
    run = summarise(
        questions,
        set_identifier="t.metrics",
        labels_fingerprint="f",
        retriever="table",
        settings=RunSettings(cutoffs=[1, 3, 10]),
    )
    assert run.metrics["hit_rate@1"] == run.top1_hit_rate
    assert run.metrics["hit_rate@3"] == run.top3_hit_rate
    assert list(run.metrics) == metrics.metric_names([1, 3, 10])
    assert run.contract()["metrics"] == run.metrics


def test_metric_names_follow_the_cutoffs_in_report_order() -> None:
    assert metrics.metric_names([10, 1, 3, 3]) == [
        "hit_rate@1",
        "hit_rate@3",
        "hit_rate@10",
        "recall@1",
        "recall@3",
        "recall@10",
        "mrr",
        "ndcg@1",
        "ndcg@3",
        "ndcg@10",
    ]


def test_per_question_frame_is_indexed_by_question_id() -> None:
    results = scored([(["a"], ["a"]), ([], [])], [1])
    frame = metrics.per_question(results, [1])
    assert list(frame.index) == ["q0", "q1"] and frame.index.name == "id"
    assert frame.loc["q0", "mrr"] == 1.0 and pd.isna(frame.loc["q1", "mrr"])


def test_cli_cutoffs_reach_the_stored_metrics(demo_config: Any) -> None:
    config = load_config(str(demo_config))
    run = run_evaluation(config, "handbook.demo", "handbook_bm25", cutoffs=[1, 3, 5, 10])
    assert run.settings.fetch_limit == 40
    assert list(run.metrics) == metrics.metric_names([1, 3, 5, 10])
    assert run.metrics["hit_rate@3"] == run.top3_hit_rate
    assert all(len(question.retrieved) <= 10 for question in run.questions)
    means = run.metrics
    assert means["recall@10"] is not None and means["recall@3"] is not None
    assert means["recall@10"] >= means["recall@3"]


# --- the bulk path: same results, faster ---------------------------------------------------------


BULK_CASES: list[tuple[list[str], list[Any] | None]] = [
    (["a"], ["a", "b"]),
    (["a", "b"], ["x", "", "b", "b", "a"]),
    ([], []),
    ([], ["x"]),
    (["a"], None),
    (["a"], ["x"] * 20 + ["a"]),
]


def test_score_many_equals_score_question_one_by_one() -> None:
    questions = [q(f"q{i}", targets) for i, (targets, _) in enumerate(BULK_CASES)]
    rankings = [ranking for _, ranking in BULK_CASES]
    bulk = score_many(questions, rankings, depth=3)
    one_by_one = [score_question(x, r, depth=3) for x, r in zip(questions, rankings, strict=True)]
    assert bulk == one_by_one
    assert [b.model_dump() for b in bulk] == [o.model_dump() for o in one_by_one]
    assert [b.model_fields_set for b in bulk] == [o.model_fields_set for o in one_by_one]


def test_score_many_follows_the_protocol_on_random_rankings() -> None:
    """Against the rules written plainly: collapse, first target, top-1/top-3, no-result."""
    rng = random.Random(11)
    docs = ["a", "b", "c", "d", "e", "f", ""]
    questions, rankings = [], []
    for i in range(500):
        targets = rng.sample(docs[:-1], rng.choice([0, 1, 1, 2, 3]))
        questions.append(q(f"q{i}", targets))
        rankings.append(rng.choices(docs, k=rng.randint(0, 8)))
    for question, ranking, result in zip(
        questions, rankings, score_many(questions, rankings, depth=4), strict=True
    ):
        distinct = collapse(ranking)
        targets = set(question.expected_document_ids)
        ranks = [i for i, doc in enumerate(distinct, 1) if doc in targets]
        first = ranks[0] if ranks else None
        assert result.retrieved == distinct[:4]
        assert result.first_hit_rank == first
        if targets:
            assert result.top1_hit == (first == 1)
            assert result.top3_hit == (first is not None and first <= 3)
        else:
            assert result.top1_hit == result.top3_hit == (not distinct)


def test_score_many_rejects_what_score_question_rejects() -> None:
    with pytest.raises(ValidationError):
        score_question(q("a", ["a"]), [1, 2])  # type: ignore[list-item]
    with pytest.raises(ValidationError):
        score_many([q("a", ["a"])], [[1, 2]])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="2 rankings for 1 questions"):
        score_many([q("a", ["a"])], [["a"], ["b"]])


def test_paused_gc_restores_the_collector_state() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), paused_gc():
        assert not gc.isenabled()
        raise RuntimeError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused_gc():
            pass
        assert not gc.isenabled()  # it was off before: it stays off
    finally:
        gc.enable()


def test_paused_gc_moves_what_the_block_kept_to_the_oldest_generation() -> None:
    """No young collection walks a block's bulk results after it; nothing is left frozen."""
    with paused_gc():
        kept = [[i] for i in range(3)]
    oldest = {id(item) for item in gc.get_objects(generation=2)}
    assert {id(kept), *map(id, kept)} <= oldest
    assert gc.get_freeze_count() == 0


def test_paused_gc_leaves_a_frozen_heap_frozen() -> None:
    """A forking server's frozen objects stay frozen: unfreezing them is not paused_gc's call."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        with paused_gc():
            kept = [[1]]
        assert gc.get_freeze_count() == frozen
        assert id(kept[0]) not in {id(item) for item in gc.get_objects(generation=2)}
    finally:
        gc.unfreeze()


def test_young_collections_only_defers_full_sweeps_and_still_frees_cycles() -> None:
    import weakref

    class Node:
        pass

    before = gc.get_threshold()
    seen: list[int] = []

    def watch(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            seen.append(info["generation"])

    gc.callbacks.append(watch)
    try:
        with pytest.raises(RuntimeError), young_collections_only():
            assert gc.get_threshold()[:2] == before[:2] and gc.get_threshold()[2] > before[2]
            cycle = Node()
            cycle.self = cycle  # type: ignore[attr-defined]
            alive = weakref.ref(cycle)
            del cycle
            kept = [[i] for i in range(300_000)]  # what a replay keeps: many small containers
            assert alive() is None  # a young collection freed the cycle in the block
            raise RuntimeError("boom")
    finally:
        gc.callbacks.remove(watch)
    assert len(kept) == 300_000 and 0 in seen and 2 not in seen
    assert gc.get_threshold() == before


def test_questions_frame_matches_the_row_by_row_frame() -> None:
    questions = scored([(["a"], ["a"]), ([], ["x"]), (["a"], RuntimeError("x"))], [1, 3])
    rows = [question.model_dump(mode="json") for question in questions]
    expected = pd.DataFrame(rows, columns=_FRAME_COLUMNS)
    expected["first_hit_rank"] = expected["first_hit_rank"].astype("Int64")
    pd.testing.assert_frame_equal(questions_frame(questions), expected, check_dtype=False)
    assert questions_frame([]).dtypes.eq(object).sum() >= len(_FRAME_COLUMNS) - 3


# --- the retrieval watchdog: reused, still abandoned on a timeout, never piling up ----------------


def watchdog_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "retrieval-eval-call"]


def test_a_timed_out_call_is_abandoned_and_the_next_question_still_runs() -> None:
    release = threading.Event()
    callers: list[str] = []

    def retrieve(text: str, limit: int) -> list[str]:
        callers.append(threading.current_thread().name)
        if text == "text of slow":
            release.wait(60)  # held until the test ends: it cannot finish in time
        return ["a"]

    questions = [q("fast1", ["a"]), q("slow", ["a"]), q("fast2", ["a"]), q("fast3", ["a"])]
    try:
        result = evaluate(
            GoldenQuestionSet(identifier="t.watchdog", questions=questions),
            FunctionRetriever(retrieve, identifier="sleepy"),
            # generous: the fast questions must not time out on a busy machine either
            RunSettings(timeout_s=2, max_error_rate=1.0),
        )
    finally:
        release.set()
    errors = [question.error for question in result.questions]
    assert errors[0] is None and errors[2] is None and errors[3] is None
    assert errors[1] == "retrieval timed out after 2 s"
    assert set(callers) == {"retrieval-eval-call"}  # never on the scoring thread itself
    assert result.top1_hits == 3


def test_watchdog_threads_end_with_their_scoring_threads() -> None:
    retriever = FunctionRetriever(lambda text, limit: ["a"], identifier="quick")
    golden = GoldenQuestionSet(
        identifier="t.pool", questions=[q(f"q{i}", ["a"]) for i in range(40)]
    )
    before = set(watchdog_threads())
    for _ in range(5):
        run = evaluate(golden, retriever, RunSettings(max_concurrency=4, timeout_s=5))
        assert run.top1_hits == 40
    for thread in set(watchdog_threads()) - before:
        thread.join(10)  # each ends once its pool worker has gone
    assert not set(watchdog_threads()) - before


def test_reports_show_the_metrics() -> None:
    from retrieval_eval.reports.report import render

    questions = scored([(["a"], ["x", "a"]), ([], [])], [1, 3])
    run = summarise(
        questions,
        set_identifier="t.metrics",
        labels_fingerprint="f",
        retriever="table",
        settings=RunSettings(cutoffs=[1, 3]),
    )
    markdown = render(run, "markdown")
    assert "<summary>Metrics</summary>" in markdown and "| mrr@12 | 0.5000 |" in markdown
    # the name says MRR read the fetch (top-3 × 4 ids), in every report a person reads
    deeper = run.model_copy(update={"settings": RunSettings(cutoffs=[1, 10])})
    assert "| mrr@40 | 0.5000 |" in render(deeper, "markdown")
    from datetime import UTC, datetime

    from retrieval_eval.reports.html import render_html
    from retrieval_eval.store.models import StoredRun

    now = datetime(2026, 1, 2, tzinfo=UTC)
    stored = StoredRun(
        id=1, grader="g", status="valid", run_date=now, created_at=now, result=deeper
    )
    assert "mrr@40" in render(deeper, "text") and "<td>mrr@40</td>" in render_html(stored)
    assert "mrr@40" not in render(deeper, "json")  # keys stay: metrics.mrr
    assert "| recall@1 | 0.0000 |" in markdown
    text = render(run, "text")
    assert "ndcg@3" in text and "0.6309" in text
    assert json.loads(render(run, "json"))["metrics"]["hit_rate@1"] == 0.5

"""The N-retriever leaderboard: ranking, McNemar against the reference, Holm, disagreements and
every edge case of the module docstring, on runs saved to and read back from a real SQLite store.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest
from statsmodels.stats.multitest import multipletests
from store.builders import hits, make_run, question

import retrieval_eval
from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.intervals import paired_difference, wilson
from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.store import Store, open_store
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.workflows.leaderboard import compare_runs, holm, latest_runs, runs_by_id

SET = "demo.set"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    with open_store(f"sqlite:///{tmp_path / 'results.sqlite'}") as opened:
        yield opened


def save(store: Store, questions: list[QuestionResult], retriever: str, **kwargs: object) -> int:
    run = make_run(questions, retriever=retriever, **kwargs)  # type: ignore[arg-type]
    return store.runs.save(run, detect_regression(run, None, Thresholds()))


def pattern(top1: str, prefix: str = "q") -> list[QuestionResult]:
    """Questions from a string of 1 (top-1 hit), 3 (top-3 hit only) and 0 (miss)."""
    return [question(f"{prefix}{i:03d}", c == "1", c in "13") for i, c in enumerate(top1)]


# -- Holm ------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(40))
def test_holm_matches_statsmodels(seed: int) -> None:
    rng = random.Random(seed)
    m = rng.randint(1, 9)
    # ties and ones on purpose: rounded p-values, some exactly 1
    p = [min(1.0, round(rng.random() ** 3, 2)) for _ in range(m)]
    alpha = rng.choice([0.01, 0.05, 0.1])
    reject, corrected, _, _ = multipletests(p, alpha=alpha, method="holm")
    ours = holm(p)
    assert ours == pytest.approx(list(corrected), abs=1e-12)
    assert [q <= alpha for q in ours] == list(reject)


def test_holm_of_nothing_and_of_one() -> None:
    assert holm([]) == []
    assert holm([0.03]) == [0.03]


# -- the board -------------------------------------------------------------------------------


def test_three_retrievers_ranked_and_compared_with_the_best(store: Store) -> None:
    #        top-1 of 12 questions: best 10, middle 7, worst 2
    save(store, pattern("111111111100"), "best")
    save(store, pattern("111111100033"), "middle")
    save(store, pattern("110000000000"), "worst")
    runs = latest_runs(store, SET, ["worst", "middle", "best"])
    board = compare_runs(runs)
    assert [e.name for e in board.entries] == ["best", "middle", "worst"]
    assert board.reference == "best" and board.reference_is_best
    best, middle, worst = board.entries
    assert best.is_reference and best.versus is None
    assert middle.top1_hit_rate_ci == list(wilson(7, 12))  # type: ignore[arg-type]
    assert middle.top3_hit_rate_ci == list(wilson(9, 12))  # type: ignore[arg-type]
    assert middle.mrr is not None and middle.ndcg_metric == "ndcg@3" and middle.ndcg is not None
    # MRR says the ids it read (top-3 × 4): the board's header and every format say it
    fetched = runs[0].result.settings.fetch_limit
    assert {e.mrr_metric for e in board.entries} == {f"mrr@{fetched}"}
    from retrieval_eval.reports.leaderboard import render_leaderboard

    assert f"MRR@{fetched}" in render_leaderboard(board, "text")
    assert middle.latency_p50_ms == 5.0 and middle.error_count == 0
    from retrieval_eval.verdicts.regression import mcnemar_exact

    p_middle, p_worst = mcnemar_exact(0, 3), mcnemar_exact(0, 8)
    assert middle.versus is not None and worst.versus is not None
    assert (middle.versus.top1_only_this, middle.versus.top1_only_reference) == (0, 3)
    assert middle.versus.p_value == p_middle and worst.versus.p_value == p_worst
    # Holm: the smaller p times 2, the larger times 1 but never below the first
    assert worst.versus.p_holm == pytest.approx(2 * p_worst)
    assert middle.versus.p_holm == pytest.approx(max(p_middle, 2 * p_worst))
    assert worst.versus.significant and not middle.versus.significant
    assert middle.versus.top1_delta == pytest.approx(-3 / 12)
    assert middle.versus.top1_delta_ci == list(paired_difference(7, 0, 3, 2))  # type: ignore[arg-type]
    # questions where some hit at top-1 and some miss: q002..q009
    assert [d.id for d in board.differences] == [f"q{i:03d}" for i in range(2, 10)]
    q007 = board.differences[5].outcomes
    assert [q007[n].top1_hit for n in ("best", "middle", "worst")] == [True, False, False]  # type: ignore[union-attr]
    assert board.same_labels and board.warnings == []


def test_alpha_decides_the_marker(store: Store) -> None:
    save(store, pattern("1111111111"), "a")
    save(store, pattern("1111100000"), "b")
    runs = latest_runs(store, SET, ["a", "b"])
    p = compare_runs(runs).entries[1].versus
    assert p is not None and p.p_value == pytest.approx(0.0625) and not p.significant
    loose = compare_runs(runs, alpha=0.1).entries[1].versus
    assert loose is not None and loose.significant
    for bad in (0.0, 1.0, -0.5):
        with pytest.raises(InvalidInputError, match="alpha"):
            compare_runs(runs, alpha=bad)


def test_a_named_reference_is_compared_with_everyone(store: Store) -> None:
    save(store, pattern("1110"), "a")
    save(store, pattern("1100"), "b")
    save(store, pattern("1000"), "c")
    board = compare_runs(latest_runs(store, SET, ["a", "b", "c"]), reference="b")
    assert board.reference == "b" and not board.reference_is_best
    assert [e.is_reference for e in board.entries] == [False, True, False]
    a = board.entries[0].versus
    assert a is not None and a.top1_delta == pytest.approx(0.25)
    with pytest.raises(UnknownNameError, match=r"'nobody' is not among .*a, b, c"):
        compare_runs(latest_runs(store, SET, ["a", "b", "c"]), reference="nobody")


def test_one_retriever_is_not_a_comparison(store: Store) -> None:
    save(store, pattern("10"), "a")
    with pytest.raises(InvalidInputError, match="at least two retrievers, got 1"):
        latest_runs(store, SET, ["a"])
    with pytest.raises(InvalidInputError, match="at least two runs, got 1"):
        compare_runs([store.get_run(1)])
    with pytest.raises(InvalidInputError, match="more than once: a"):
        latest_runs(store, SET, ["a", "a"])


def test_a_retriever_without_runs_names_set_retriever_and_the_stored_ones(store: Store) -> None:
    save(store, pattern("10"), "bm25")
    save(store, pattern("11"), "dense")
    with pytest.raises(UnknownNameError) as caught:
        latest_runs(store, SET, ["bm25", "ghost"])
    message = str(caught.value)
    assert "'demo.set'" in message and "'ghost'" in message
    assert message.endswith("retrievers with runs on this set: bm25, dense")


def test_a_near_miss_name_gets_the_closest_stored_one(store: Store) -> None:
    save(store, pattern("10"), "bm25_chunks")
    save(store, pattern("11"), "bm25_whole")
    with pytest.raises(UnknownNameError) as caught:
        latest_runs(store, SET, ["bm25_chunks", "bm25_wole"])
    assert str(caught.value).endswith(
        "retrievers with runs on this set: bm25_chunks, bm25_whole (did you mean 'bm25_whole'?)"
    )
    with pytest.raises(UnknownNameError) as caught:
        latest_runs(store, "demo.sett", ["bm25_chunks", "bm25_whole"])
    # the set is the typo: the sets with runs are named, not "no retrievers"
    assert str(caught.value).endswith(f"sets with runs: {SET} (did you mean '{SET}'?)")


def test_different_labels_warn_and_compare_anyway(store: Store) -> None:
    save(store, pattern("11"), "a", fingerprint="fp-1")
    save(store, pattern("10"), "b", fingerprint="fp-2")
    board = compare_runs(latest_runs(store, SET, ["a", "b"]))
    assert not board.same_labels
    assert len(board.warnings) == 1 and "different labels" in board.warnings[0]
    assert "a (run 1)" in board.warnings[0] and "b (run 2)" in board.warnings[0]
    assert board.entries[1].versus is not None  # compared anyway


def test_questions_missing_from_some_runs(store: Store) -> None:
    save(store, pattern("1111"), "a")  # q000..q003
    save(store, pattern("00") + pattern("11", prefix="x"), "b")  # q000, q001, x000, x001
    board = compare_runs(latest_runs(store, SET, ["a", "b"]))
    b = board.entries[1].versus
    assert b is not None and b.shared_questions == 2 and b.top1_only_reference == 2
    assert "4 question(s) are missing from some runs" in board.warnings[0]
    # q002/q003 only in a, x000/x001 only in b: one outcome each, so no disagreement
    assert [d.id for d in board.differences] == ["q000", "q001"]
    assert board.differences[0].outcomes["b"] is not None


def test_a_disagreement_counts_runs_that_have_the_question(store: Store) -> None:
    save(store, pattern("10"), "a")
    save(store, pattern("0"), "b")  # lacks q001
    save(store, pattern("11"), "c")
    board = compare_runs(latest_runs(store, SET, ["a", "b", "c"]))
    by_id = {d.id: d for d in board.differences}
    assert set(by_id) == {"q000", "q001"}
    assert by_id["q001"].outcomes["b"] is None


def test_ties_rank_by_top3_then_name_whatever_the_order(store: Store) -> None:
    save(store, pattern("1000"), "zeta")
    save(store, pattern("1300"), "beta")
    save(store, pattern("1300"), "alpha")
    names = ["zeta", "beta", "alpha"]
    for order in (names, names[::-1]):
        board = compare_runs(latest_runs(store, SET, order))
        assert [e.name for e in board.entries] == ["alpha", "beta", "zeta"]


def test_all_equal_results_give_p_one(store: Store) -> None:
    for name in ("a", "b", "c"):
        save(store, pattern("1100"), name)
    board = compare_runs(latest_runs(store, SET, ["a", "b", "c"]))
    for entry in board.entries[1:]:
        v = entry.versus
        assert v is not None and (v.p_value, v.p_holm, v.significant) == (1.0, 1.0, False)
        assert v.top1_delta == 0 and v.top1_delta_ci == list(paired_difference(2, 0, 0, 2))  # type: ignore[arg-type]
    assert board.differences == []


def test_no_shared_question_has_no_change(store: Store) -> None:
    save(store, pattern("1"), "a")
    save(store, pattern("0", prefix="x"), "b")
    v = compare_runs(latest_runs(store, SET, ["a", "b"])).entries[1].versus
    assert v is not None and v.shared_questions == 0
    assert (v.top1_delta, v.top1_delta_ci, v.p_value) == (None, None, 1.0)


def test_runs_by_id_two_runs_of_one_retriever_and_other_sets(store: Store) -> None:
    first = save(store, pattern("10"), "bm25", day=0)
    second = save(store, pattern("11"), "bm25", day=1)
    other = save(store, pattern("11"), "bm25", set_identifier="other.set")
    board = compare_runs(runs_by_id(store, [first, second]))
    assert [e.name for e in board.entries] == [f"bm25 (run {second})", f"bm25 (run {first})"]
    assert board.differences[0].outcomes[f"bm25 (run {first})"].top1_hit is False  # type: ignore[union-attr]
    with pytest.raises(InvalidInputError, match=r"one golden set.*'other.set'"):
        compare_runs(runs_by_id(store, [first, other]))
    with pytest.raises(InvalidInputError, match="more than once: 1"):
        runs_by_id(store, [first, first])
    with pytest.raises(UnknownNameError, match="no stored run with id 99"):
        runs_by_id(store, [first, 99])


def test_runs_without_metrics_or_successes_have_none(store: Store) -> None:
    errored = [question("q000", False, error="down"), question("q001", False, error="down")]
    save(store, errored, "broken", max_error_rate=1.0)
    save(store, pattern("10"), "ok")
    board = compare_runs(latest_runs(store, SET, ["broken", "ok"]))
    broken = board.entries[1]
    assert broken.name == "broken" and broken.error_count == 2
    assert broken.latency_p50_ms is None and broken.latency_p95_ms is None
    assert board.differences[0].outcomes["broken"].error == "down"  # type: ignore[union-attr]
    stripped = store.get_run(1).model_copy(deep=True)
    stripped.result.metrics = {}
    entry = compare_runs([stripped, store.get_run(2)]).entries[1]
    assert (entry.mrr, entry.mrr_metric, entry.ndcg, entry.ndcg_metric) == (None,) * 4


def test_the_verb_is_exported_from_the_package_root() -> None:
    from retrieval_eval.workflows import leaderboard

    assert retrieval_eval.compare_runs is leaderboard.compare_runs
    assert retrieval_eval.Leaderboard is leaderboard.Leaderboard


def test_hits_builder_ranks_like_rates(store: Store) -> None:
    """A larger board (30 questions, 5 retrievers): ranks follow the top-1 rates."""
    rates = {"r1": 27, "r2": 12, "r3": 20, "r4": 5, "r5": 20}
    for name, k in rates.items():
        save(store, hits(k, 30), name)
    board = compare_runs(latest_runs(store, SET, list(rates)))
    assert [e.name for e in board.entries] == ["r1", "r3", "r5", "r2", "r4"]
    assert len([e for e in board.entries if e.versus]) == 4
    holm_values = [e.versus.p_holm for e in board.entries if e.versus]
    raw = [e.versus.p_value for e in board.entries if e.versus]
    assert holm_values == pytest.approx(list(multipletests(raw, method="holm")[1]))

"""The scoring protocol, rule by rule, with hand-made rankings."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pytest

from retrieval_eval.config.models import Config
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate, score_question, score_questions
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.retrievers.ranking import collapse
from retrieval_eval.workflows.labelled_run import run_evaluation


def q(qid: str, targets: Sequence[str] = (), form: str = "match", hard: str | None = None):
    return GoldenQuestion(
        id=qid, question=f"text of {qid}", form=form, expected_document_ids=tuple(targets),
        hard_class=hard,
    )  # fmt: skip


def golden(*questions: GoldenQuestion) -> GoldenQuestionSet:
    return GoldenQuestionSet(identifier="t.set", questions=questions)


def by_text(rankings: dict[str, Any]) -> FunctionRetriever:
    """A retriever answering each question text from a table (``text of <id>``)."""

    def retrieve(question: str, limit: int) -> Any:
        value = rankings[question.removeprefix("text of ")]
        if isinstance(value, BaseException):
            raise value
        return value

    return FunctionRetriever(retrieve, identifier="table")


def one(targets: Sequence[str], ranking: Any, **settings: Any):
    """Score a single question against a single ranking."""
    [result] = score_questions([q("x", targets)], by_text({"x": ranking}), RunSettings(**settings))
    return result


# --- overfetch and collapse -------------------------------------------------------------------


def test_asks_for_twelve_ids_by_default() -> None:
    limits: list[int] = []
    retriever = FunctionRetriever(lambda text, limit: limits.append(limit) or [])
    score_questions([q("a"), q("b")], retriever)
    assert limits == [12, 12]


def test_deeper_cutoffs_deepen_the_overfetch() -> None:
    limits: list[int] = []
    retriever = FunctionRetriever(lambda text, limit: limits.append(limit) or [])
    score_questions([q("a", ["d9"])], retriever, RunSettings(cutoffs=[1, 3, 10]))
    assert limits == [40]


def test_collapse_keeps_first_occurrences_and_drops_empty_ids() -> None:
    assert collapse(["a", "a", "", "b", "a", "c", "", "b", "d"]) == ["a", "b", "c", "d"]
    assert collapse([]) == []
    assert collapse(["", ""]) == []


def test_duplicates_do_not_push_a_target_out_of_the_top3() -> None:
    # raw position 5, but third distinct document: a top-3 hit
    result = one(["t"], ["a", "a", "b", "b", "t", "c"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (False, True, 3)
    assert result.retrieved == ["a", "b", "t"]


def test_top3_means_three_distinct_documents() -> None:
    # fourth distinct document: a miss although it is among the first 12 ids
    result = one(["t"], ["a", "b", "a", "c", "b", "t"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (False, False, 4)
    assert result.retrieved == ["a", "b", "c"]


def test_empty_ids_are_ignored() -> None:
    result = one(["t"], ["", "", "t"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (True, True, 1)


def test_top1_hit_is_the_first_distinct_document() -> None:
    result = one(["t"], ["t", "a", "t"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (True, True, 1)


def test_judge_ranks_beyond_twelve_are_still_counted_from_the_ranking_given() -> None:
    result = score_question(q("x", ["t"]), [f"d{i}" for i in range(12)] + ["t"])
    assert result.first_hit_rank == 13 and not result.top3_hit


# --- multi-target and no-result questions -------------------------------------------------------


def test_any_target_counts_and_the_rank_is_the_first_target() -> None:
    result = one(["x", "y"], ["z", "y", "x"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (False, True, 2)
    both = one(["x", "y"], ["x", "y"])
    assert (both.top1_hit, both.top3_hit, both.first_hit_rank) == (True, True, 1)


@pytest.mark.parametrize("ranking", [[], (), ["", ""]])
def test_no_result_question_is_a_hit_when_nothing_comes_back(ranking: Any) -> None:
    result = one([], ranking)
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (True, True, None)


def test_no_result_question_is_a_miss_when_anything_comes_back() -> None:
    result = one([], ["a"])
    assert (result.top1_hit, result.top3_hit, result.first_hit_rank) == (False, False, None)
    assert result.retrieved == ["a"]


# --- errors, timeouts and wrong return types ---------------------------------------------------


def test_raising_retriever_is_a_miss_with_the_error_text() -> None:
    result = one(["t"], RuntimeError("backend down"))
    assert (result.top1_hit, result.top3_hit) == (False, False)
    assert result.error == "RuntimeError: backend down"
    assert result.retrieved == [] and result.first_hit_rank is None
    assert result.latency_ms is not None and result.latency_ms >= 0


def test_error_on_a_no_result_question_is_a_miss_not_correctly_nothing() -> None:
    result = one([], ConnectionError("refused"))
    assert (result.top1_hit, result.top3_hit) == (False, False)
    assert result.error == "ConnectionError: refused"


def test_exception_without_text_is_named_by_its_type() -> None:
    assert one(["t"], KeyError()).error == "KeyError"


@pytest.mark.parametrize(
    "value,expected",
    [
        (None, "retriever returned NoneType, expected a sequence of document id strings"),
        ("t", "retriever returned str, expected a sequence"),
        (42, "retriever returned int"),
        ({"t": 1.0}, "retriever returned dict"),
        (iter(["t"]), "retriever returned list_iterator"),
        (np.array(["t"]), "convert arrays with .tolist()"),
        (["t", 7], "retriever returned int at position 1, expected a document id string"),
        ([b"t"], "retriever returned bytes at position 0"),
    ],
)
def test_not_a_sequence_of_strings_is_an_error_and_a_miss(value: Any, expected: str) -> None:
    for targets in (["t"], []):
        result = one(targets, value)
        assert (result.top1_hit, result.top3_hit) == (False, False)
        assert result.error is not None and expected in result.error
        assert result.error.startswith("TypeError: ")


def test_tuple_is_a_fine_sequence() -> None:
    assert one(["t"], ("t",)).top1_hit


# Timeouts without races: a call that must time out blocks on an Event set only when the test
# ends (it cannot finish in time, however loaded the machine); a call that must not gets
# GENEROUS seconds (a fast call on a busy 2-core machine can take longer than 0.1 s). So these
# tests wait out a GENEROUS timeout; a call that must return late sleeps: a sleep never ends
# early on the monotonic clock the scorer reads, so its overrun is certain.
GENEROUS = 2.0  # 20× that 0.1 s; each test below waits it out once
HELD_S = 60  # an Event wait's own bound, so a broken scorer fails instead of hanging


def test_timeout_is_an_error_and_a_miss_and_the_run_goes_on() -> None:
    release = threading.Event()

    def retrieve(question: str, limit: int) -> list[str]:
        if question == "text of slow":
            release.wait(HELD_S)  # held until the test ends; the scorer must not wait for it
            return ["t"]
        return ["t"]

    try:
        results = score_questions(
            [q("slow", []), q("fast", ["t"])],
            FunctionRetriever(retrieve),
            RunSettings(timeout_s=GENEROUS),
        )
    finally:
        release.set()
    slow, fast = results
    assert slow.error == f"retrieval timed out after {GENEROUS:g} s"
    assert (slow.top1_hit, slow.top3_hit) == (False, False)
    assert fast.error is None and fast.top1_hit


def test_no_timeout_calls_directly() -> None:
    seen: list[str] = []
    retriever = FunctionRetriever(lambda t, k: seen.append(threading.current_thread().name) or [])
    score_questions([q("a")], retriever, RunSettings(timeout_s=None))
    assert seen == [threading.current_thread().name]


def test_a_self_timed_retriever_runs_in_the_scoring_thread_and_overruns_still_miss() -> None:
    import time

    seen: list[str] = []

    class SelfTimed:
        identifier = "self-timed"
        bounds_own_time = True

        def retrieve(self, question: str, limit: int) -> list[str]:
            seen.append(threading.current_thread().name)
            if question == "text of slow":
                time.sleep(GENEROUS + 0.5)  # its own timeout would end it; here it overruns
            return ["t"]

    slow, fast = score_questions(
        [q("slow", ["t"]), q("fast", ["t"])], SelfTimed(), RunSettings(timeout_s=GENEROUS)
    )
    assert seen == [threading.current_thread().name] * 2  # no watchdog thread in between
    assert slow.error == f"retrieval timed out after {GENEROUS:g} s"
    assert (slow.top1_hit, slow.top3_hit) == (False, False)
    assert fast.error is None and fast.top1_hit


def test_calls_stay_on_one_call_thread_until_one_times_out() -> None:
    """No hand-off per call: one call thread asks every question, the caller only supervises;
    an abandoned call takes its thread with it and a fresh one asks the rest."""
    release = threading.Event()
    threads: list[tuple[str, int]] = []

    def retrieve(question: str, limit: int) -> list[str]:
        threads.append((question, threading.get_ident()))
        if question == "text of slow":
            release.wait(HELD_S)
        return ["t"]

    questions = [q("a", ["t"]), q("b", ["t"]), q("slow", ["t"]), q("c", ["t"]), q("d", ["t"])]
    try:
        results = score_questions(
            questions, FunctionRetriever(retrieve), RunSettings(timeout_s=GENEROUS)
        )
    finally:
        release.set()
    idents = dict(threads)
    assert threading.get_ident() not in idents.values()
    assert idents["text of a"] == idents["text of b"] == idents["text of slow"]
    assert idents["text of c"] == idents["text of d"] != idents["text of slow"]
    timed_out = f"retrieval timed out after {GENEROUS:g} s"
    assert [r.error for r in results] == [None, None, timed_out, None, None]
    assert results[2].latency_ms is not None and results[2].latency_ms >= GENEROUS * 1000


def test_a_call_that_returns_late_is_a_timeout_even_when_nothing_abandoned_it() -> None:
    import time

    from retrieval_eval.evaluation.scoring import _chunk_scorer, _result

    def retrieve(question: str, limit: int) -> list[str]:
        time.sleep(0.5)  # five times its budget; a sleep cannot end early, so it IS late
        return ["t"]

    # the chunk scorer alone, in this thread: no supervisor could have abandoned the call, and
    # its overrun is still recorded (the supervisor may wake late on a busy machine)
    score, _ = _chunk_scorer(FunctionRetriever(retrieve), RunSettings(timeout_s=0.1), _result)
    [late] = score([q("a", ["t"])])
    assert late.error == "retrieval timed out after 0.1 s" and not late.top1_hit
    [batch_a, batch_b] = _chunk_scorer(
        Batching(lambda texts, limit: time.sleep(0.5) or [["t"]] * len(texts)),
        RunSettings(timeout_s=0.1),
        _result,
    )[0]([q("a", ["t"]), q("b", ["t"])])
    assert batch_a.error == batch_b.error == "retrieval timed out after 0.2 s"


def test_a_hung_question_does_not_hold_the_other_workers() -> None:
    release = threading.Event()
    lock = threading.Lock()
    in_flight = peak = 0

    def retrieve(question: str, limit: int) -> list[str]:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        try:
            if question == "text of q1":
                release.wait(HELD_S)
            return ["t"]
        finally:
            with lock:
                in_flight -= 1

    questions = [q(f"q{i}", ["t"]) for i in range(30)]
    try:
        results = score_questions(
            questions,
            FunctionRetriever(retrieve),
            RunSettings(timeout_s=GENEROUS, max_concurrency=3),
        )
    finally:
        release.set()
    assert [r.id for r in results] == [f"q{i}" for i in range(30)]
    assert [i for i, r in enumerate(results) if r.error] == [1]
    assert peak <= 3 + 1  # the abandoned call is still in flight, as with any timeout


@pytest.mark.parametrize("timeout_s", [5.0, None])  # on call threads / in the calling thread
def test_an_interrupt_in_a_retriever_stops_the_run(timeout_s: float | None) -> None:
    calls: list[str] = []

    def retrieve(question: str, limit: int) -> list[str]:
        calls.append(question)
        if question == "text of b":
            raise KeyboardInterrupt
        return []

    questions = [q(x) for x in "abcdef"]
    with pytest.raises(KeyboardInterrupt):
        score_questions(questions, FunctionRetriever(retrieve), RunSettings(timeout_s=timeout_s))
    assert calls == ["text of a", "text of b"]  # no question is asked after it


class Stray(BaseException):
    """A BaseException of the retriever's own, neither an Exception nor an interrupt."""


@pytest.mark.parametrize("timeout_s", [5.0, None])  # on call threads / in the calling thread
@pytest.mark.parametrize("concurrency", [1, 2])
@pytest.mark.parametrize(
    "raised,error",
    [
        (SystemExit(7), "SystemExit: 7"),
        (SystemExit(), "SystemExit"),
        (GeneratorExit("closed"), "GeneratorExit: closed"),
        (Stray("odd"), "Stray: odd"),
    ],
)
def test_a_retrievers_base_exception_is_its_questions_error_and_the_run_goes_on(
    timeout_s: float | None, concurrency: int, raised: BaseException, error: str
) -> None:
    gs = golden(q("a", ["t"]), q("b", ["t"]), q("c", ["t"]))
    retriever = by_text({"a": ["t"], "b": raised, "c": ["t"]})
    settings = RunSettings(timeout_s=timeout_s, max_concurrency=concurrency, max_error_rate=0.5)
    result = evaluate(gs, retriever, settings)
    assert [r.error for r in result.questions] == [None, error, None]
    assert (result.top1_hits, result.error_count, result.valid) == (2, 1, True)


@pytest.mark.parametrize("timeout_s", [5.0, None])
def test_a_retrieve_many_base_exception_fails_its_batch_only(timeout_s: float | None) -> None:
    def leave(texts: Sequence[str], limit: int) -> Any:
        raise SystemExit("bye")

    results = score_questions([q("a"), q("b")], Batching(leave), RunSettings(timeout_s=timeout_s))
    assert [r.error for r in results] == ["SystemExit: bye"] * 2


def test_an_exception_whose_text_exits_is_named_by_its_type() -> None:
    class Exiting(Exception):
        def __str__(self) -> str:
            raise SystemExit(3)

    assert one(["t"], Exiting()).error == "Exiting"


def test_errors_do_not_stop_the_run_and_are_counted() -> None:
    gs = golden(q("a", ["t"]), q("b", ["t"]), q("c", []), q("d", ["t"]))
    retriever = by_text({"a": ["t"], "b": ValueError("bad"), "c": None, "d": ["x", "t"]})
    result = evaluate(gs, retriever, RunSettings(max_error_rate=0.5))
    assert [r.id for r in result.questions] == ["a", "b", "c", "d"]
    assert [r.error is None for r in result.questions] == [True, False, False, True]
    assert result.error_count == 2
    assert (result.top1_hits, result.top3_hits) == (1, 2)
    assert result.valid  # 2/4 = 0.5 is not above 0.5


@pytest.mark.parametrize("max_error_rate,valid", [(0.0, False), (0.24, False), (0.25, True)])
def test_max_error_rate_decides_validity(max_error_rate: float, valid: bool) -> None:
    gs = golden(q("a", ["t"]), q("b", ["t"]), q("c", ["t"]), q("d", ["t"]))
    retriever = by_text({"a": ["t"], "b": ["t"], "c": ["t"], "d": OSError("x")})
    result = evaluate(gs, retriever, RunSettings(max_error_rate=max_error_rate))
    assert result.error_count == 1 and result.valid is valid


def test_default_max_error_rate_is_zero() -> None:
    result = evaluate(golden(q("a", ["t"])), by_text({"a": RuntimeError("x")}))
    assert result.settings.max_error_rate == 0.0 and not result.valid


# --- retrieve_many ------------------------------------------------------------------------------


class Batching:
    identifier = "batching"

    def __init__(self, answer: Callable[[Sequence[str], int], Any]) -> None:
        self.answer = answer
        self.single: list[str] = []
        self.batches: list[list[str]] = []
        self.limits: list[int] = []

    def retrieve(self, question: str, limit: int) -> list[str]:
        self.single.append(question)
        return []

    def retrieve_many(self, questions: Sequence[str], limit: int) -> Any:
        self.batches.append(list(questions))
        self.limits.append(limit)
        return self.answer(questions, limit)


def test_retrieve_many_is_used_when_present() -> None:
    retriever = Batching(lambda texts, limit: [["t"] if t.endswith("a") else [] for t in texts])
    results = score_questions([q("a", ["t"]), q("b", ["t"]), q("c", [])], retriever)
    assert retriever.single == []
    assert retriever.batches == [["text of a", "text of b", "text of c"]]
    assert retriever.limits == [12]
    assert [(r.id, r.top1_hit) for r in results] == [("a", True), ("b", False), ("c", True)]


def test_retrieve_many_batches_are_split_across_workers() -> None:
    retriever = Batching(lambda texts, limit: [[] for _ in texts])
    questions = [q(f"q{i}") for i in range(10)]
    results = score_questions(questions, retriever, RunSettings(max_concurrency=3))
    assert sorted(len(b) for b in retriever.batches) == [2, 4, 4]
    assert [r.id for r in results] == [f"q{i}" for i in range(10)]


def test_retrieve_many_failure_marks_every_question_of_the_batch() -> None:
    def boom(texts: Sequence[str], limit: int) -> Any:
        raise RuntimeError("batch endpoint down")

    results = score_questions([q("a", ["t"]), q("b", [])], Batching(boom))
    assert [r.error for r in results] == ["RuntimeError: batch endpoint down"] * 2
    assert not any(r.top1_hit or r.top3_hit for r in results)


def test_retrieve_many_wrong_number_of_rankings_is_an_error() -> None:
    results = score_questions([q("a", ["t"]), q("b", [])], Batching(lambda t, k: [["t"]]))
    assert all(r.error and "1 rankings for 2 questions" in r.error for r in results)
    assert not any(r.top3_hit for r in results)


def test_retrieve_many_timeout_is_a_miss_for_the_whole_batch() -> None:
    release = threading.Event()

    def hang(texts: Sequence[str], limit: int) -> Any:
        release.wait(HELD_S)  # nothing here must NOT time out, so the budget can stay small
        return [["t"] for _ in texts]

    try:
        results = score_questions(
            [q("a", ["t"]), q("b", [])], Batching(hang), RunSettings(timeout_s=0.05)
        )
    finally:
        release.set()
    # the batch gets the per-question timeout times its size
    assert [r.error for r in results] == ["retrieval timed out after 0.1 s"] * 2
    assert not any(r.top1_hit or r.top3_hit for r in results)


def test_retrieve_many_one_bad_ranking_only_fails_its_own_question() -> None:
    results = score_questions(
        [q("a", ["t"]), q("b", []), q("c", ["t"])],
        Batching(lambda texts, limit: [["t"], None, ["t"]]),
    )
    assert [r.error is None for r in results] == [True, False, True]
    assert "NoneType" in (results[1].error or "")
    assert [r.top1_hit for r in results] == [True, False, True]


# --- concurrency and order ----------------------------------------------------------------------


class Gauge:
    """Counts simultaneous calls; ``peak`` is the most seen at once."""

    def __init__(self, parties: int) -> None:
        self.lock = threading.Lock()
        self.now = self.peak = 0
        # calls meet in groups of ``parties``: proves they really overlap
        self.barrier = threading.Barrier(parties, timeout=5)

    def __call__(self, question: str, limit: int) -> list[str]:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            self.barrier.wait()
        finally:
            with self.lock:
                self.now -= 1
        return []


def test_concurrency_is_bounded_by_the_setting() -> None:
    gauge = Gauge(parties=3)
    questions = [q(f"q{i}") for i in range(12)]
    results = score_questions(questions, FunctionRetriever(gauge), RunSettings(max_concurrency=3))
    assert all(r.error is None for r in results)
    assert gauge.peak == 3


def test_concurrency_falls_back_to_the_retrievers_own_bound() -> None:
    gauge = Gauge(parties=2)
    retriever = FunctionRetriever(gauge, max_concurrency=2)
    results = score_questions([q(f"q{i}") for i in range(6)], retriever)
    assert all(r.error is None for r in results)
    assert gauge.peak == 2


def test_in_process_retrievers_run_one_question_at_a_time_by_default() -> None:
    gauge = Gauge(parties=1)
    score_questions([q(f"q{i}") for i in range(5)], FunctionRetriever(gauge))
    assert gauge.peak == 1


def test_order_is_kept_when_later_questions_finish_first() -> None:
    n = 4
    done = [threading.Event() for _ in range(n)]
    finished: list[int] = []

    def retrieve(question: str, limit: int) -> list[str]:
        i = int(question.removeprefix("text of q"))
        if i + 1 < n:
            done[i + 1].wait(5)  # each question waits for the next one to finish
        finished.append(i)
        done[i].set()
        return [f"d{i}"]

    questions = [q(f"q{i}", [f"d{i}"]) for i in range(n)]
    results = score_questions(
        questions, FunctionRetriever(retrieve), RunSettings(max_concurrency=n)
    )
    assert finished == [3, 2, 1, 0]
    assert [r.id for r in results] == ["q0", "q1", "q2", "q3"]
    assert all(r.top1_hit for r in results)


def test_progress_reports_every_question() -> None:
    counts: list[int] = []
    retriever = FunctionRetriever(lambda text, limit: [])
    score_questions([q(f"q{i}") for i in range(5)], retriever, progress=counts.append)
    assert sum(counts) == 5


# --- per-question fields and the run ---------------------------------------------------------


def test_per_question_fields() -> None:
    question = q("x", ["t", "u"], form="gap", hard="near-duplicate")
    [r] = score_questions([question], by_text({"x": ["a", "t", "b", "c", "u"]}))
    assert r.id == "x" and r.question == "text of x"
    assert r.form.value == "gap" and r.hard_class == "near-duplicate"
    assert r.expected_document_ids == ("t", "u")  # the question's own tuple
    assert (r.top1_hit, r.top3_hit, r.first_hit_rank) == (False, True, 2)
    assert r.retrieved == ["a", "t", "b"]
    assert r.latency_ms is not None and r.latency_ms >= 0
    assert r.error is None


def test_evaluate_fills_the_run_header() -> None:
    gs = golden(q("a", ["t"]), q("b", []))
    result = evaluate(gs, by_text({"a": ["t"], "b": []}))
    assert result.set_identifier == "t.set" and result.retriever == "table"
    assert result.labels_fingerprint == gs.fingerprint
    assert (result.question_count, result.top1_hits, result.top1_hit_rate) == (2, 2, 1.0)
    assert result.started_at <= result.finished_at
    assert result.settings.fetch_limit == 12


def test_run_evaluation_closes_the_retriever(tmp_path: Any, monkeypatch: Any) -> None:
    (tmp_path / "closing_retriever.py").write_text(
        "closed = []\n"
        "class R:\n"
        "    identifier = 'closing'\n"
        "    def retrieve(self, question, limit):\n"
        "        return []\n"
        "    def close(self):\n"
        "        closed.append(True)\n"
    )
    (tmp_path / "s.yaml").write_text(
        "identifier: s\nquestions:\n  - {id: a, question: b, form: gap}\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    result = run_evaluation(Config(), str(tmp_path / "s.yaml"), "closing_retriever:R")
    import closing_retriever  # type: ignore[import-not-found]

    assert closing_retriever.closed == [True]
    assert result.top1_hits == 1

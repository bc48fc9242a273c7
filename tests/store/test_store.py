"""The store on both backends: round trip, idempotency, concurrency, odd names, reads, pruning."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, insert, select

from retrieval_eval.errors import InvalidInputError, UnknownNameError
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.store import Store, open_store
from retrieval_eval.store import runs as runs_module
from retrieval_eval.store.engine import StoreFailedError
from retrieval_eval.store.rows import slice_rows
from retrieval_eval.store.schema import eval_result, eval_result_question, eval_result_slice
from retrieval_eval.verdicts.regression import Verdict
from store.builders import hits, make_run, question


def _count(store: Store, table) -> int:  # type: ignore[no-untyped-def]
    with store.engine.connect() as conn:
        return int(conn.execute(select(func.count()).select_from(table)).scalar_one())


def test_round_trip_keeps_every_field(store: Store) -> None:
    questions = [
        question("m1", True, form="match", hard_class="near-duplicate", latency_ms=1.25),
        question("m2", False, True, form="match", hard_class="near-duplicate"),
        question("g1", False, form="gap", hard_class="boilerplate"),
        question("g2", False, form="gap", error="TimeoutError: retriever took longer than 30s"),
        question("n1", True, form="gap"),
    ]
    result = make_run(
        questions,
        set_name="Demo set",
        corpus_revision="rev-42",
        max_error_rate=0.5,
        run_key="key-round-trip",
    )
    verdict = Verdict(state="baseline", summary="first run")
    run_id = store.runs.save(result, verdict)

    stored = store.get_run(run_id)
    assert stored.result.model_dump() == result.model_dump()
    assert stored.id == run_id
    assert stored.grader == "retrieval_hit_rate"
    assert stored.status == "valid"
    assert stored.verdict == verdict
    assert stored.verdict_state == "baseline"
    assert stored.is_regression is False
    assert stored.accepted_baseline is False
    assert stored.baseline_run_id is None
    assert stored.run_date == result.started_at
    assert stored.created_at.tzinfo is not None
    assert abs(stored.created_at - datetime.now(UTC)) < timedelta(minutes=5)

    with store.engine.connect() as conn:
        row = conn.execute(select(eval_result).where(eval_result.c.id == run_id)).mappings().one()
    # the shared table's general columns carry this tool's figures
    assert row["set_identifier"] == "demo.set"
    assert row["model_id"] == "bm25"
    assert row["prompt_count"] == 5
    assert row["passed_count"] == 2
    assert row["pass_rate"] == pytest.approx(0.4)
    assert row["mean_score"] == pytest.approx(0.6)
    assert row["error_count"] == 1
    assert row["labels_fingerprint"] == "fp-1"
    assert row["corpus_revision"] == "rev-42"
    assert row["latency_p95_ms"] == result.latency_ms.p95
    assert row["details"]["verdict"]["state"] == "baseline"
    assert row["details"]["settings"]["max_error_rate"] == 0.5
    assert _count(store, eval_result_question) == 5
    assert _count(store, eval_result_slice) == len(result.by_form) + len(result.by_hard_class)


def test_invalid_run_is_stored_as_invalid(store: Store) -> None:
    result = make_run([question("a", False, error="boom"), question("b", True)])
    assert not result.valid
    stored = store.get_run(store.runs.save(result))
    assert stored.status == "invalid"
    assert stored.result.valid is False
    assert stored.verdict is None


def test_saving_the_same_run_key_twice_stores_it_once(store: Store) -> None:
    result = make_run(hits(3, 4), run_key="same-key")
    first = store.runs.save(result)
    second = store.runs.save(result.model_copy(update={"top1_hits": 0}))
    assert first == second
    assert _count(store, eval_result) == 1
    assert _count(store, eval_result_question) == 4


def _slices_breaking_not_null(result: RunResult, run_id: int) -> list[dict[str, object]]:
    rows = slice_rows(result, run_id)
    rows[-1]["value"] = None  # eval_result_slice.value is NOT NULL
    return rows


@pytest.mark.parametrize("failing", ["question rows", "slice rows"])
def test_a_save_that_fails_after_the_summary_row_stores_nothing(
    store: Store, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    """Summary, questions and slices go in one transaction: no half-saved run is ever visible.

    The failure comes after the eval_result insert; a run saved in two transactions would keep its
    summary row (and ``save`` would even return its id, taking the error for a racing writer).
    """
    kept = store.runs.save(make_run(hits(2, 3), run_key="kept"))  # an earlier run stays untouched
    before = [
        _count(store, table) for table in (eval_result, eval_result_question, eval_result_slice)
    ]
    if failing == "question rows":
        # two questions with one id break uq_eval_result_question_run_question
        result = make_run([question("dup", True), question("dup", False)], run_key="half")
    else:
        result = make_run(hits(1, 3), run_key="half")
        monkeypatch.setattr(runs_module, "slice_rows", _slices_breaking_not_null)
    with pytest.raises(StoreFailedError, match="cannot use the result store"):
        store.runs.save(result)  # a run being recorded is spooled (exit 3), not lost
    assert store.runs.by_key("half") is None
    after = [
        _count(store, table) for table in (eval_result, eval_result_question, eval_result_slice)
    ]
    assert after == before
    assert [r.id for r in store.history("demo.set", "bm25")] == [kept]


def test_concurrent_saves_lose_no_rows(store_url: str) -> None:
    """Eight writers (own stores, like separate processes) race on a database nobody created."""
    results = [make_run(hits(i, 40), day=i, run_key=f"concurrent-{i}") for i in range(8)]
    results.append(results[0])  # and one run saved twice at the same time
    barrier = threading.Barrier(len(results))
    ids: list[int] = []
    errors: list[BaseException] = []

    def save(result) -> None:  # type: ignore[no-untyped-def]
        try:
            barrier.wait()
            with open_store(store_url) as own:
                ids.append(own.runs.save(result))
        except BaseException as exc:  # surfaced below; a thread can't fail the test itself
            errors.append(exc)

    threads = [threading.Thread(target=save, args=(r,)) for r in results]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(set(ids)) == 8
    with open_store(store_url) as check:
        assert _count(check, eval_result) == 8
        assert _count(check, eval_result_question) == 8 * 40
        for run_id in set(ids):
            run = check.get_run(run_id)
            assert len(run.result.questions) == 40
            assert run.result.top1_hits == int(run.result.run_key.split("-")[1])


@pytest.mark.parametrize(
    "name",
    [
        'it\'s "quoted"',
        "x'); DROP TABLE eval_result; --",
        "100% _like_ \\ back\\slash",
        "ünïcødé ✓ set",
    ],
)
def test_names_with_quotes_and_sql_metacharacters_are_stored_verbatim(
    store: Store, name: str
) -> None:
    result = make_run(
        [question(name, True, hard_class=name), question("b", False)],
        set_identifier=name,
        retriever=name,
    )
    run_id = store.runs.save(result)
    decoy = store.runs.save(make_run(hits(1, 2), set_identifier="100X _like_", retriever=name))
    assert store.get_run(run_id).result.set_identifier == name
    assert [r.id for r in store.history(name, name)] == [run_id]
    assert store.find_baseline(name, name, "fp-1") is not None
    assert store.get_run(run_id).result.questions[0].id == name
    assert name in store.get_run(run_id).result.by_hard_class
    assert decoy != run_id
    assert _count(store, eval_result) == 2  # the table survived


def test_get_run_names_an_unknown_id(store: Store) -> None:
    with pytest.raises(UnknownNameError, match="no stored run with id 999"):
        store.get_run(999)


@pytest.mark.parametrize("run_id", [2**31, 3_000_000_000, 0, -1])
def test_ids_no_store_can_hold_are_unknown_runs(store: Store, run_id: int) -> None:
    """Not PostgreSQL's "integer out of range" (eval_result.id is a 32-bit INTEGER)."""
    store.runs.save(make_run(hits(1, 2)))
    with pytest.raises(UnknownNameError, match=f"no stored run with id {run_id} in "):
        store.get_run(run_id)


def test_history_is_newest_first_and_limited(store: Store) -> None:
    ids = [store.runs.save(make_run(hits(i, 5), day=i)) for i in range(4)]
    store.runs.save(make_run(hits(1, 5), retriever="other", day=9))
    history = store.history("demo.set", "bm25", limit=3)
    assert [r.id for r in history] == ids[::-1][:3]
    assert [len(r.result.questions) for r in history] == [5, 5, 5]
    light = store.history("demo.set", "bm25", questions=False)
    assert [r.result.questions for r in light] == [[], [], [], []]
    assert light[0].result.by_form["match"].questions == 5


def test_latest_runs_gives_the_newest_run_of_each_pair(store: Store) -> None:
    store.runs.save(make_run(hits(1, 5), day=0))
    newest = store.runs.save(make_run(hits(2, 5), day=2))
    store.runs.save(make_run(hits(3, 5), day=1))
    other = store.runs.save(make_run(hits(1, 5), retriever="dense", day=0))
    other_set = store.runs.save(make_run(hits(1, 5), set_identifier="b.set", day=0))
    latest = store.latest_runs()
    assert [(r.result.set_identifier, r.result.retriever, r.id) for r in latest] == [
        ("b.set", "bm25", other_set),
        ("demo.set", "bm25", newest),
        ("demo.set", "dense", other),
    ]


def test_summaries_of_one_pair_or_of_every_pair(store: Store) -> None:
    old = store.runs.save(make_run(hits(1, 4, form="gap"), day=0))
    mid = store.runs.save(make_run(hits(2, 4, form="gap"), day=1))
    new = store.runs.save(make_run(hits(3, 4, form="gap"), day=2))
    dense = store.runs.save(make_run(hits(1, 2), retriever="dense", day=0))
    pair = store.runs.summaries("demo.set", "bm25", 2)
    assert [(s.run_id, s.top1_hits, s.question_count) for s in pair] == [(new, 3, 4), (mid, 2, 4)]
    assert pair[0].by_form == {} and pair[0].top1_hit_rate_ci is not None
    assert store.runs.summaries("demo.set", "bm25", 1, slices=True)[0].by_form["gap"].questions == 4
    every = store.runs.summaries(limit=2)
    assert [(s.retriever, s.run_id) for s in every] == [
        ("bm25", new),
        ("bm25", mid),
        ("dense", dense),
    ]
    assert old not in {s.run_id for s in store.runs.summaries(limit=2)}
    with pytest.raises(ValueError, match="both a set and a retriever, or neither"):
        store.runs.summaries("demo.set")


def test_rows_of_other_graders_are_left_alone(store: Store) -> None:
    """eval_result is shared: answer-quality rows need none of this tool's extra columns."""
    with store.engine.begin() as conn:
        conn.execute(
            insert(eval_result).values(
                set_identifier="demo.set",
                model_id="bm25",
                grader="answer_quality",
                prompt_count=3,
                passed_count=2,
                pass_rate=2 / 3,
                mean_score=0.7,
                details={"judge": "llm"},
                run_date=datetime(2020, 1, 1, tzinfo=UTC),
                created_at=datetime(2020, 1, 1, tzinfo=UTC),
            )
        )
    mine = store.runs.save(make_run(hits(1, 5)))
    assert [r.id for r in store.history("demo.set", "bm25")] == [mine]
    assert [r.id for r in store.latest_runs()] == [mine]
    assert store.prune(0) == 0  # mine is the current baseline; the foreign row is not ours
    assert _count(store, eval_result) == 2


def test_prune_deletes_old_runs_with_their_rows(store: Store) -> None:
    now = datetime.now(UTC)
    old = store.runs.save(make_run(hits(4, 5), day=0), Verdict(state="baseline"))
    later = store.runs.save(
        make_run(hits(4, 5), day=1), Verdict(state="no_regression", baseline_run_id=old)
    )
    recent = store.runs.save(make_run(hits(4, 5)).model_copy(update={"started_at": now}))
    only_run_of_old_labels = store.runs.save(make_run(hits(2, 5), fingerprint="fp-0", day=-5))

    assert store.prune(30) == 2
    kept = {r.id for r in store.history("demo.set", "bm25", limit=100)}
    assert kept == {recent, only_run_of_old_labels}  # the latter: the baseline of its labels
    assert old not in kept and later not in kept
    assert _count(store, eval_result_question) == 10
    assert _count(store, eval_result_slice) == 4  # two forms each, no hard classes


def test_prune_never_deletes_the_current_baseline(store: Store) -> None:
    baseline = store.runs.save(make_run(hits(4, 5), day=0), Verdict(state="baseline"))
    regression = store.runs.save(
        make_run(hits(1, 5), day=1),
        Verdict(state="regression", is_regression=True, baseline_run_id=baseline),
    )
    assert store.prune(0) == 1
    assert store.find_baseline("demo.set", "bm25", "fp-1").id == baseline
    with pytest.raises(UnknownNameError):
        store.get_run(regression)


def test_pruning_a_baseline_unlinks_the_runs_compared_with_it(store: Store) -> None:
    first = store.runs.save(make_run(hits(4, 5), day=0), Verdict(state="baseline"))
    second = store.runs.save(
        make_run(hits(4, 5), day=1), Verdict(state="no_regression", baseline_run_id=first)
    )
    assert store.prune(0) == 1  # ``second`` is now the baseline
    survivor = store.get_run(second)
    assert survivor.baseline_run_id is None
    assert survivor.verdict is not None and survivor.verdict.baseline_run_id == first


def test_prune_rejects_a_negative_age(store: Store) -> None:
    with pytest.raises(InvalidInputError, match="zero or more"):
        store.prune(-1)


def test_accept_baseline_marks_the_run_and_refuses_invalid_runs(store: Store) -> None:
    run_id = store.runs.save(make_run(hits(1, 5)), Verdict(state="regression", is_regression=True))
    store.runs.accept_baseline(run_id)
    assert store.get_run(run_id).accepted_baseline is True
    invalid = store.runs.save(make_run([question("a", False, error="down")]))
    with pytest.raises(InvalidInputError, match="invalid"):
        store.runs.accept_baseline(invalid)
    with pytest.raises(UnknownNameError):
        store.runs.accept_baseline(12345)

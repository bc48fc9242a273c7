"""Every gated depth stored per run and per slice (eval_result_depth), read back, summarised,
pruned; the seed's columns keep top-1 and top-3; runs stored before the table read as before."""

from __future__ import annotations

from alembic import command
from sqlalchemy import delete, func, inspect, select

from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.store import Store
from retrieval_eval.store.migrate import HEAD, alembic_config
from retrieval_eval.store.schema import eval_result, eval_result_depth
from retrieval_eval.verdicts.regression import Verdict
from store.builders import ranked_run

RANKS = {"a": 1, "b": 2, "c": 4, "d": 5, "e": 7, "f": 10, "g": None}
CLASSES = {"a": "easy", "b": "easy", "c": "easy", "d": "hard", "e": "hard"}


def _run(depths: list[int], day: int = 0) -> RunResult:
    forms = {qid: "gap" for qid in RANKS if qid >= "d"}
    return ranked_run(RANKS, depths, day=day, forms=forms, classes=CLASSES)


def _rows(store: Store, run_id: int) -> dict[tuple[str, str, int], tuple[int, int]]:
    with store.engine.connect() as conn:
        found = conn.execute(
            select(eval_result_depth).where(eval_result_depth.c.run_id == run_id)
        ).mappings()
        return {
            (r["dimension"], r["value"], r["depth"]): (r["hits"], r["question_count"])
            for r in found
        }


def test_every_gated_depth_is_stored_per_run_and_per_slice(store: Store) -> None:
    result = _run([1, 3, 5, 10])
    run_id = store.runs.save(result, Verdict(state="baseline"))
    rows = _rows(store, run_id)
    scopes = 1 + len(result.by_form) + len(result.by_hard_class)
    assert len(rows) == scopes * 4
    assert [rows["overall", "", d] for d in (1, 3, 5, 10)] == [(1, 7), (2, 7), (4, 7), (6, 7)]
    assert rows["hard_class", "hard", 5] == (1, 2) and rows["form", "gap", 10] == (3, 4)
    with store.engine.connect() as conn:
        seed = conn.execute(
            select(eval_result.c.passed_count, eval_result.c.pass_rate, eval_result.c.mean_score)
        ).one()
    assert tuple(seed) == (1, 1 / 7, 2 / 7)  # the seed's columns: top-1 hits and rate, top-3 rate
    stored = store.get_run(run_id).result
    assert stored.model_dump() == result.model_dump()
    assert stored.hits_at == {1: 1, 3: 2, 5: 4, 10: 6}
    assert stored.by_hard_class["hard"].hit_rate(5) == 0.5


def test_summaries_read_every_depth_without_questions(store: Store) -> None:
    first = store.runs.save(_run([1, 5]), Verdict(state="baseline"))
    verdict = Verdict.model_validate(
        {"state": "no_regression", "baseline_run_id": first, "by_depth": {
            1: {"max_drop": 0.1, "delta": 0.0}, 5: {"max_drop": 0.1, "delta": -0.25}}}
    )  # fmt: skip
    store.runs.save(_run([1, 5], day=1), verdict)
    newest, oldest = store.runs.summaries("demo.set", "bm25", slices=True)
    assert (newest.depths, newest.hits_at) == ([1, 5], {1: 1, 5: 4})
    assert newest.hit_rate(5) == 4 / 7 and newest.hit_rate_ci(5) is not None
    assert (newest.delta(5), newest.delta(1), oldest.delta(5)) == (-0.25, 0.0, None)
    assert newest.before_after("top5") == (4 / 7 + 0.25, 4 / 7)
    assert newest.by_form["gap"].hits_at == {1: 0, 5: 1}


def test_prune_removes_the_depth_rows(store: Store) -> None:
    old = _run([1, 5], day=-400)
    store.runs.save(old, Verdict(state="baseline"))
    store.runs.save(_run([1, 5], day=-399), Verdict(state="no_regression"))  # the baseline: kept
    assert store.prune(30) == 1
    with store.engine.connect() as conn:
        left = conn.execute(select(func.count()).select_from(eval_result_depth)).scalar_one()
    assert left == 1 * (1 + 2 + 2) * 2  # one run: overall, two forms, two classes; two depths


def test_a_run_stored_before_the_depth_table_reads_top1_and_top3(store: Store) -> None:
    run_id = store.runs.save(_run([1, 3]), Verdict(state="baseline"))
    with store.engine.begin() as conn:
        conn.execute(delete(eval_result_depth))
    again = store.get_run(run_id).result
    assert again.hits_at == {1: 1, 3: 2} and again.by_form["match"].hits_at == {1: 1, 3: 2}
    assert again.model_dump() == _run([1, 3]).model_dump() | {
        "run_key": again.run_key,
        "started_at": again.started_at,
        "finished_at": again.finished_at,
    }


def test_db_upgrade_adds_the_table_to_a_store_of_the_previous_revision(store_url: str) -> None:
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0005_run_versions")
        assert "eval_result_depth" not in inspect(store.engine).get_table_names()
        store.upgrade()
        assert "eval_result_depth" in inspect(store.engine).get_table_names()
        assert store.revision() == HEAD

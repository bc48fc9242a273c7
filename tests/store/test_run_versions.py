"""Migration 0004: every labelled run records the index it measured and the retrieval-eval that
scored it; rows stored before keep NULL and read back as "not recorded"."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import inspect, text

from retrieval_eval import installed_version
from retrieval_eval.config.models import Thresholds
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.migrate import HEAD, alembic_config
from retrieval_eval.workflows.recording import judge_and_save
from store.builders import hits, make_run


def test_upgrading_from_0003_adds_the_columns_and_old_rows_stay_null(store_url: str) -> None:
    with Store(store_url) as store:
        with store.engine.begin() as conn:
            command.upgrade(alembic_config(conn), "0003_replays")
        columns = {c["name"] for c in inspect(store.engine).get_columns("eval_result")}
        assert not {"index_version", "package_version"} & columns
        now = datetime(2026, 11, 1, tzinfo=UTC)
        with store.engine.begin() as conn:  # a run as a version before 0004 stored it
            conn.execute(
                text(
                    "INSERT INTO eval_result (set_identifier, model_id, grader, prompt_count, "
                    "passed_count, pass_rate, mean_score, run_date, created_at, run_key) VALUES "
                    "('demo.set', 'bm25', 'retrieval_hit_rate', 2, 1, 0.5, 0.5, :t, :t, 'old')"
                ),
                {"t": now},
            )
        store.upgrade()
        assert store.revision() == HEAD
    with open_store(store_url) as store:
        old = store.runs.by_key("old")
        assert old is not None
        assert (old.result.index_version, old.result.package_version) == (None, None)
        (listed,) = store.runs.summaries("demo.set", "bm25")
        assert (listed.index_version, listed.package_version) == (None, None)
        with store.engine.connect() as conn:
            row = conn.execute(text("SELECT index_version, package_version FROM eval_result")).one()
        assert tuple(row) == (None, None)


def test_a_run_keeps_its_versions_and_its_verdict_names_the_baselines(store: Store) -> None:
    first = make_run(hits(2, 2), day=0).model_copy(update={"index_version": "2026-11-29.1"})
    second = make_run(hits(2, 2), day=1).model_copy(update={"index_version": "2026-11-30.2"})
    unnamed = make_run(hits(2, 2), day=2)  # a manual run: no asset event, no --index-version
    base = judge_and_save(store, first, Thresholds())
    judged = judge_and_save(store, second, Thresholds())
    last = judge_and_save(store, unnamed, Thresholds())
    assert judged.verdict.baseline_index_version == "2026-11-29.1"
    assert f"against run {base.run_id} (index 2026-11-30.2 vs 2026-11-29.1):" in (
        verdict_summary(judged.verdict)
    )
    # one side unknown names no pair: "index None vs ..." would say something false
    assert last.verdict.baseline_index_version == "2026-11-30.2"
    assert "(index" not in verdict_summary(last.verdict)
    newest, middle, oldest = store.runs.summaries("demo.set", "bm25")
    assert [r.index_version for r in (newest, middle, oldest)] == [
        None,
        "2026-11-30.2",
        "2026-11-29.1",
    ]
    assert (middle.baseline_index_version, oldest.baseline_index_version) == (
        "2026-11-29.1",
        None,
    )
    assert {r.package_version for r in (newest, middle, oldest)} == {installed_version()}
    stored = store.get_run(judged.run_id or 0)
    assert stored.result.index_version == "2026-11-30.2"
    assert stored.result.contract()["index_version"] == "2026-11-30.2"

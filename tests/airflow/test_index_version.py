"""Which index a DAG run measured: the triggering asset events' ``extra`` (Airflow's own
accessor over its own event models, no scheduler), read when a task binds its labelled run and
carried into the stored run, its baseline's named in the verdict and the alert."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from airflow.sdk import Asset
from airflow.sdk.execution_time.comms import AssetEventDagRunReferenceResult
from airflow.sdk.execution_time.context import TriggeringAssetEventsAccessor
from dag_helpers import EXAMPLES

from retrieval_eval import installed_version
from retrieval_eval.airflow.alerts import build_message
from retrieval_eval.airflow.lines import score_line, worded_verdict
from retrieval_eval.airflow.runtime import index_version, labelled_run
from retrieval_eval.store import open_store
from retrieval_eval.workflows.base import run_in_process

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")
T0 = datetime(2026, 11, 30, 4, 0, tzinfo=UTC)


def event(uri: str, extra: dict[str, Any], minutes: int = 0) -> AssetEventDagRunReferenceResult:
    """An event as the execution API hands it to a task: the asset's name and normalised URI
    as Airflow stored them (``Asset`` normalises ``index://docs`` to ``index://docs/``)."""
    asset = Asset(uri)
    return AssetEventDagRunReferenceResult(
        asset={"name": asset.name, "uri": asset.uri, "extra": {}},
        extra=extra,
        source_task_id=None,
        source_dag_id=None,
        source_run_id=None,
        source_map_index=None,
        source_aliases=[],
        timestamp=T0 + timedelta(minutes=minutes),
    )


def accessor(*events: AssetEventDagRunReferenceResult) -> TriggeringAssetEventsAccessor:
    return TriggeringAssetEventsAccessor.build(events)


def test_the_newest_event_naming_a_version_wins_across_assets() -> None:
    events = accessor(
        event("index://docs", {"index_version": "2026-11-29.1"}, 0),
        event("index://docs", {"index_version": "2026-11-30.2", "from_rest_api": True}, 5),
        event("index://faq", {"build": "faq-7"}, 3),
        event("index://faq", {"unrelated": 1}, 9),  # newest, but names no version
    )
    assert index_version(events) == "2026-11-30.2"


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({"index_version": "v1", "version": "v2"}, "v1"),  # index_version first
        ({"version": "  v2  "}, "v2"),  # stripped
        ({"build": 17}, "17"),  # any JSON value, as text
        ({"index_version": "   ", "build": "b3"}, "b3"),  # a blank one names nothing
        ({"index_version": "x" * 500}, "x" * 200),  # a label, not a document
        ({"index_version": "v\ud800"}, "v\\ud800"),  # JSON may hold a lone surrogate
        ({}, None),
    ],
)
def test_what_an_extra_names(extra: dict[str, Any], expected: str | None) -> None:
    assert index_version(accessor(event("index://docs", extra))) == expected


def test_a_run_no_asset_event_started_names_no_index() -> None:
    assert index_version(accessor()) is None
    assert index_version(None) is None


def test_the_bound_run_stores_the_version_and_the_alert_names_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two asset-triggered runs: the second is judged against the first, and its verdict, its
    history row and its alert say which two index builds were compared."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", url)  # the store the task resolves at run time
    job = {"config_path": CONFIG, "set": "handbook.demo", "retriever": "handbook_bm25"}
    recorded = []
    for key, version in (("k1", "2026-11-29.1"), ("k2", "2026-11-30.2")):
        context = {
            "dag_run": SimpleNamespace(dag_id="d", run_id=key, start_date=None),
            "params": {},
            "triggering_asset_events": accessor(
                event("index://handbook", {"index_version": version})
            ),
        }
        record = run_in_process(labelled_run(job, context))
        assert record.result.run_key == f"airflow:d:{key}"
        assert f"(index {version})" in score_line(record.result.model_dump(mode="json"))
        recorded.append((record.result, record.model_dump(mode="json")))
    (result, second) = recorded[1]
    assert second["verdict"]["baseline_index_version"] == "2026-11-29.1"
    summary = str(worded_verdict(second)["summary"])  # stored as data, worded when read
    assert summary.startswith(
        f"No regression against run {recorded[0][1]['run_id']} "
        "(index 2026-11-30.2 vs 2026-11-29.1):"
    )
    assert record.run_id == second["run_id"]
    message = build_message("regression", result, record)
    assert "index 2026-11-30.2 vs 2026-11-29.1" in message.text()
    assert (message.index_version, message.baseline_index_version) == (
        "2026-11-30.2",
        "2026-11-29.1",
    )
    with open_store(url) as store:
        newest = store.runs.summaries("handbook.demo", "handbook_bm25")[0]
    assert (newest.index_version, newest.baseline_index_version) == (
        "2026-11-30.2",
        "2026-11-29.1",
    )
    assert newest.package_version == installed_version()

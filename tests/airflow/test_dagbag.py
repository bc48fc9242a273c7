"""Every file in dags/ loads in a DagBag; configured pairs give the expected DAGs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES, ROOT, write_config

pytestmark = pytest.mark.airflow

EXPECTED_TASKS = {
    "load_golden_set",
    "retrieve",
    "score",
    "persist",
    "check_regression",
    "alert_regression",
    "alert_invalid_run",
    "no_regression",
}


def _bag(monkeypatch: pytest.MonkeyPatch, config: Path | None):
    from airflow.dag_processing.dagbag import DagBag

    if config is None:
        monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    else:
        monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(config))
    return DagBag(dag_folder=str(ROOT / "dags"))


def test_every_dag_file_loads_and_demo_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    bag = _bag(monkeypatch, None)
    assert bag.import_errors == {}
    assert list(bag.dags) == ["retrieval_eval__handbook_demo__handbook_bm25"]


def test_demo_dag_shape(monkeypatch: pytest.MonkeyPatch) -> None:
    bag = _bag(monkeypatch, EXAMPLES / "retrieval_eval.yaml")
    dag = bag.dags["retrieval_eval__handbook_demo__handbook_bm25"]
    assert {t.task_id for t in dag.tasks} == EXPECTED_TASKS
    assert dag.max_active_runs == 1
    assert dag.catchup is False
    assert "retrieval-eval" in dag.tags and "demo" in dag.tags
    assert dag.owner == "search-team"
    # cron and asset trigger together: either one starts a run
    timetable = dag.timetable
    assert type(timetable).__name__ == "AssetOrTimeSchedule"
    assert timetable.timetable.expression == "0 3 * * *"
    from airflow.sdk import Asset

    # an index-rebuild DAG with outlets=[Asset("retrieval-index://handbook")] triggers it
    assert [a.uri for a in timetable.asset_condition.objects] == [
        Asset("retrieval-index://handbook").uri
    ]
    chain = {
        "load_golden_set": {"retrieve"},
        "retrieve": {"score"},
        "score": {"persist", "alert_regression", "alert_invalid_run"},
        "persist": {"check_regression", "alert_regression", "alert_invalid_run", "no_regression"},
        "check_regression": {"alert_regression", "alert_invalid_run", "no_regression"},
    }
    for task_id, downstream in chain.items():
        assert dag.get_task(task_id).downstream_task_ids == downstream, task_id
    assert dag.get_task("retrieve").retries == 2
    assert dag.get_task("retrieve").retry_exponential_backoff
    assert dag.get_task("persist").retries == 2
    assert set(dag.params) == {
        "max_top1_drop",
        "max_top3_drop",
        "fail_on_regression",
        "baseline_run_id",
    }


def test_configured_pairs_give_one_dag_each(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "c.yaml", store="sqlite:///x.sqlite", retriever="handbook_bm25"
    )
    data = yaml.safe_load(config.read_text())
    data["evaluations"] += [
        {
            "set": "handbook.demo",
            "retriever": "switchable_retrievers:switchable",
            "schedule": None,
            "assets": ["retrieval-index://a", "retrieval-index://b"],
        },
        {"set": "handbook.demo", "retriever": "other", "schedule": "30 1 * * 1-5"},
    ]
    config.write_text(yaml.safe_dump(data))
    bag = _bag(monkeypatch, config)
    assert bag.import_errors == {}
    assert sorted(bag.dags) == [
        "retrieval_eval__handbook_demo__handbook_bm25",
        "retrieval_eval__handbook_demo__other",
        "retrieval_eval__handbook_demo__switchable_retrievers_switchable",
    ]
    assets_only = bag.dags["retrieval_eval__handbook_demo__switchable_retrievers_switchable"]
    assert type(assets_only.timetable).__name__ == "AssetTriggeredTimetable"
    cron_only = bag.dags["retrieval_eval__handbook_demo__other"]
    assert cron_only.timetable.expression == "30 1 * * 1-5"


def test_parsing_builds_no_retriever_and_touches_no_store(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # a corpus that does not exist and a store that cannot be reached: parsing must not care
    config = tmp_path / "c.yaml"
    config.write_text(
        "store: postgresql://nobody@127.0.0.1:1/none\n"
        "retrievers: {r: {type: lexical, corpus: /does/not/exist}}\n"
        "evaluations: [{set: some.set, retriever: r}]\n"
    )
    bag = _bag(monkeypatch, config)
    assert bag.import_errors == {}
    assert list(bag.dags) == ["retrieval_eval__some_set__r"]

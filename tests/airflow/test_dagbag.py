"""Every file in dags/ loads in a DagBag; configured pairs give the expected DAGs."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES, ROOT, write_config

pytestmark = pytest.mark.airflow

EXPECTED_TASKS = {
    "load_golden_set",  # the plan: it lints the set too (config lint: warn, the default)
    "retrieve",
    "score",
    "persist",
    "check_regression",
    "alert_regression",
    "alert_invalid_run",
    "alert_labels",
    "no_regression",
    "baseline",
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
    assert (
        "This is the demo evaluation"
        in bag.dags["retrieval_eval__handbook_demo__handbook_bm25"].doc_md
    )


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
    alerts = {"alert_regression", "alert_invalid_run", "alert_labels"}
    chain = {
        "load_golden_set": {"retrieve"},  # lint before retrieval; the findings ride batch 0
        "retrieve": {"score"},
        "score": {"persist"},
        # the record (result included) is all the branch and alert tasks read
        "persist": {"check_regression", *alerts, "no_regression", "baseline"},
        "check_regression": {*alerts, "no_regression", "baseline"},
    }
    for task_id, downstream in chain.items():
        assert dag.get_task(task_id).downstream_task_ids == downstream, task_id
    # every task does I/O and retries with exponential backoff (config: airflow.retries, ...)
    for task in dag.tasks:
        assert task.retries == 3, task.task_id
        assert task.retry_exponential_backoff == 2.0, task.task_id
        assert task.retry_delay.total_seconds() == 30
        assert task.max_retry_delay.total_seconds() == 600
    assert "This is the demo evaluation" not in dag.doc_md  # configured, if by the demo's file
    # the API server reads the persist task's "Run page" link from the serialized DAG alone
    from airflow.serialization.serialized_objects import DagSerialization

    served = DagSerialization.from_dict(DagSerialization.to_dict(dag))
    links = {task_id: served.get_task(task_id).extra_links for task_id in EXPECTED_TASKS}
    assert links == {task_id: ["Run page"] if task_id == "persist" else [] for task_id in links}
    assert set(dag.params) == {
        "depths",
        "max_drops",
        "max_top1_drop",
        "max_top3_drop",
        "relevance_level",
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
    assert "This is the demo evaluation" not in cron_only.doc_md


def test_retry_settings_and_queue_come_from_the_config(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        store="sqlite:///x.sqlite",
        retriever="handbook_bm25",
        airflow={
            "retries": 5,
            "retry_delay_s": 2,
            "retry_backoff": 3,
            "max_retry_delay_s": 60,
            "queue": "retrieval",
        },
    )
    dag = _bag(monkeypatch, config).dags["retrieval_eval__handbook_demo__handbook_bm25"]
    for task in dag.tasks:
        assert (task.retries, task.retry_exponential_backoff) == (5, 3.0), task.task_id
        assert task.queue == "retrieval"
        assert task.retry_delay.total_seconds() == 2
        assert task.max_retry_delay.total_seconds() == 60


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "does not exist"),
        ("evaluations: [\n", "invalid YAML"),
        ("evaluations: [{set: s}]\n", "evaluations.0.retriever"),
        (b"\xff\xfe\x00binary", "not UTF-8 text"),
    ],
)
def test_a_configured_config_that_cannot_be_read_is_an_import_error_not_the_demo(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, content: str | bytes | None, message: str
) -> None:
    config = tmp_path / "c.yaml"
    if isinstance(content, bytes):
        config.write_bytes(content)
    elif content is not None:
        config.write_text(content)
    bag = _bag(monkeypatch, config)
    assert bag.dags == {}
    (error,) = bag.import_errors.values()
    assert message in error and str(config) in error
    assert "$RETRIEVAL_EVAL_CONFIG" in error


def test_the_variable_is_read_only_when_opted_in(monkeypatch: pytest.MonkeyPatch) -> None:
    """No metadata-database access at parse time unless asked for: with the opt-in and no
    readable Variable the import fails with the reason instead of building the demo."""
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG_VARIABLE", "retrieval_eval_config")
    monkeypatch.setenv("AIRFLOW__DATABASE__SQL_ALCHEMY_CONN", "sqlite:////nonexistent/dir/x.db")
    bag = _bag(monkeypatch, None)
    assert bag.dags == {}
    (error,) = bag.import_errors.values()
    assert "Airflow Variable 'retrieval_eval_config'" in error
    assert "$RETRIEVAL_EVAL_CONFIG_VARIABLE" in error


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


def test_lint_off_is_a_job_setting_not_a_task(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    config = write_config(
        tmp_path / "c.yaml",
        store="sqlite:///x.sqlite",
        retriever="handbook_bm25",
        extra={"lint": "off"},
    )
    bag = _bag(monkeypatch, config)
    dag = bag.dags["retrieval_eval__handbook_demo__handbook_bm25"]
    assert {t.task_id for t in dag.tasks} == EXPECTED_TASKS
    plan = dag.get_task("load_golden_set")
    assert plan.op_kwargs["workflow"] == "labelled_run"
    assert plan.op_kwargs["job"]["lint"] == "off"


def test_approve_baseline_asks_in_an_approval_dag_of_its_own_only_where_configured(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The evaluation's branch only emits the request (an asset event), so its DAG run ends as
    its verdict says; the approval DAG, scheduled on that asset, waits for the answer."""
    config = write_config(
        tmp_path / "c.yaml", store="sqlite:///x.sqlite", retriever="handbook_bm25"
    )
    data = yaml.safe_load(config.read_text())
    data["evaluations"].append(
        {
            "set": "handbook.demo",
            "retriever": "other",
            "schedule": None,
            "approve_baseline": True,
            "approval_timeout_s": 5400,
        }
    )
    config.write_text(yaml.safe_dump(data))
    bag = _bag(monkeypatch, config)
    assert bag.import_errors == {}
    plain = bag.dags["retrieval_eval__handbook_demo__handbook_bm25"]
    assert {t.task_id for t in plain.tasks} == EXPECTED_TASKS
    assert "approve_baseline" not in plain.get_task("persist").op_kwargs["job"]
    assert "retrieval_eval_approval__handbook_demo__handbook_bm25" not in bag.dags
    dag = bag.dags["retrieval_eval__handbook_demo__other"]
    assert {t.task_id for t in dag.tasks} == EXPECTED_TASKS | {"request_approval"}
    ask = dag.get_task("request_approval")
    assert ask.upstream_task_ids == {"check_regression", "persist"}
    uri = "retrieval-eval://approval/retrieval_eval__handbook_demo__other"
    assert [a.uri for a in ask.outlets] == [uri]
    approval = bag.dags["retrieval_eval_approval__handbook_demo__other"]
    assert approval.timetable.asset_condition.uri == uri
    assert approval.max_active_runs == 1
    assert {t.task_id for t in approval.tasks} == {"approve_baseline", "accept_baseline"}
    approve = approval.get_task("approve_baseline")
    from airflow.providers.standard.operators.hitl import ApprovalOperator

    assert isinstance(approve, ApprovalOperator)
    # Reject (or no answer in time: the default) skips accept
    assert approve.downstream_task_ids == {"accept_baseline"}
    assert approve.defaults == ["Reject"]
    assert approve.response_timeout.total_seconds() == 5400
    # the serialized DAG (what the scheduler and api-server read) keeps the operator
    from airflow.serialization.serialized_objects import DagSerialization

    served = DagSerialization.from_dict(DagSerialization.to_dict(approval))
    assert served.get_task("approve_baseline").task_type == "BaselineApproval"

"""Run keys name their DAG run, and the links to a run's page and its DAG run are built once."""

from __future__ import annotations

import uuid

from retrieval_eval.reports.links import (
    DagRunRef,
    airflow_url_of,
    dag_run_of,
    dag_run_url,
    replay_page_url,
    run_key_for,
    run_page_url,
)

RUN_ID = "manual__2026-12-01T10:00:00.123456+00:00"


def test_a_dag_run_key_round_trips_and_its_url_is_encoded_as_airflow_does() -> None:
    key = run_key_for("retrieval_eval__handbook_demo__bm25", RUN_ID)
    assert key == f"airflow:retrieval_eval__handbook_demo__bm25:{RUN_ID}"
    ref = dag_run_of(key)
    assert ref == DagRunRef("retrieval_eval__handbook_demo__bm25", RUN_ID)  # ":" kept in the run id
    assert dag_run_url("https://af.example/", ref) == (
        "https://af.example/dags/retrieval_eval__handbook_demo__bm25/runs/"
        "manual__2026-12-01T10%3A00%3A00.123456%2B00%3A00"
    )
    assert dag_run_url("", DagRunRef("d", "a/b")) == "/dags/d/runs/a%2Fb"  # same origin


def test_other_run_keys_name_no_dag_run() -> None:
    for key in (uuid.uuid4().hex, "airflow:", "airflow:dag", "airflow::run", "cli:dag:run", ""):
        assert dag_run_of(key) is None, key


def test_run_and_replay_pages_under_the_dashboard_base() -> None:
    assert run_page_url("http://af/retrieval-eval/", 12) == "http://af/retrieval-eval/runs/12"
    assert replay_page_url("http://af/retrieval-eval", 3) == "http://af/retrieval-eval/replays/3"
    assert run_page_url(None, 12) is None and run_page_url("http://af", None) is None


def test_the_airflow_ui_is_the_dashboard_base_without_the_mount_point() -> None:
    assert airflow_url_of("https://af.example/retrieval-eval") == "https://af.example"
    assert airflow_url_of("https://af.example/sub/retrieval-eval/") == "https://af.example/sub"
    assert airflow_url_of("https://dash.example/") is None and airflow_url_of(None) is None

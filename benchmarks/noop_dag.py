"""A do-nothing DAG file of the evaluation DAG's shape, the reference of the Airflow benchmarks.

Same task graph (``load_golden_set``, which lints too, → mapped ``retrieve`` → ``score`` →
``persist`` → the ``check_regression`` branch and its four followers, which read the record), same DAG arguments (``max_active_runs``,
tags, ``doc_md``, ``default_args`` with retries, the seven Params with their JSON schemas,
``render_template_as_native_obj``); the tasks return at once. What remains between it and the
real DAG file is the package's own cost.
"""

from __future__ import annotations

TEMPLATE = """
from datetime import datetime, timedelta
from airflow.sdk import (
    DAG, Asset, AssetAny, AssetOrTimeSchedule, CronTriggerTimetable, Param, task
)

@task
def load_golden_set(job, n):
    return list(range(n))

@task
def retrieve(job, batch):
    return batch

@task
def score(job, batch_results):
    return len(list(batch_results))

@task
def persist(job, result):
    return {"state": "ok"}

@task.branch
def check_regression(recorded):
    return ["no_regression"]

@task
def alert_regression(job, recorded):
    return ""

@task
def alert_invalid_run(job, recorded):
    return ""

@task
def alert_labels(job, recorded):
    return ""

@task
def no_regression(recorded):
    return ""

def params():
    return {
        "max_top1_drop": Param(None, type=["null", "number"], minimum=0, maximum=1,
                               description="top-1 drop"),
        "max_top3_drop": Param(None, type=["null", "number"], minimum=0, maximum=1,
                               description="top-3 drop"),
        "depths": Param(None, type=["null", "array"], items={"type": "integer"},
                        description="depths"),
        "max_drops": Param(None, type=["null", "object"], description="drops"),
        "relevance_level": Param(None, type=["null", "integer"], minimum=1, maximum=3,
                                 description="level"),
        "fail_on_regression": Param(False, type="boolean", description="fail"),
        "baseline_run_id": Param(None, type=["null", "integer"], minimum=1,
                                 description="baseline"),
    }

for dag_id, n in DAGS:
    job = {"set": dag_id, "retriever": "noop", "max_batches": n}
    with DAG(
        dag_id,
        schedule=SCHEDULE,
        start_date=datetime(2024, 1, 1),
        catchup=False,
        max_active_runs=1,
        tags=["retrieval-eval", "noop"],
        doc_md="### A do-nothing DAG of the evaluation's shape",
        default_args={"owner": "noop", "retries": 3, "retry_delay": timedelta(seconds=30),
                      "retry_exponential_backoff": 2.0,
                      "max_retry_delay": timedelta(seconds=600)},
        params=params(),
        render_template_as_native_obj=True,
    ) as dag:
        planned = load_golden_set(job=job, n=n)
        batches = retrieve.partial(job=job).expand(batch=planned)
        result = score(job=job, batch_results=batches)
        recorded = persist(job=job, result=result)
        check_regression(recorded=recorded) >> [
            alert_regression(job=job, recorded=recorded),
            alert_invalid_run(job=job, recorded=recorded),
            alert_labels(job=job, recorded=recorded),
            no_regression(recorded=recorded),
        ]
    globals()[dag.dag_id] = dag
"""

# the demo evaluation's schedule: nightly cron OR an index-rebuild asset
DEMO_SCHEDULE = (
    'AssetOrTimeSchedule(timetable=CronTriggerTimetable("0 3 * * *", timezone="UTC"), '
    'assets=AssetAny(Asset("retrieval-index://handbook")))'
)


def noop_dag_file(dags: list[tuple[str, int]], schedule: str = "None") -> str:
    """The DAG file's source: one do-nothing DAG per ``(dag_id, batches)``, ``schedule`` as code."""
    return f"DAGS = {dags!r}\n" + TEMPLATE.replace("schedule=SCHEDULE", f"schedule={schedule}")

"""Gate your index build: promote a new index version only if retrieval did not regress.

Two ways, on the demo (``demo_index.py``: index versions behind a ``candidate`` and a ``live``
alias; ``index_build.yaml``: the demo set measured on the candidate):

1. **In the build DAG** (``demo_index_build_gated``): build → ``evaluate_retrieval`` (the
   labelled run as a task group: batches, store, alerts, verdict) → ``retrieval_gate`` →
   promote. A regression skips the promotion; the live alias stays where it was.
2. **Through assets** (``demo_index_build`` → the generated evaluation DAG →
   ``demo_index_promotion``): the build only announces its version (an event on
   ``retrieval-index://handbook-candidate``, ``extra`` naming it); the evaluation DAG that asset
   starts records the run and emits ``retrieval-eval://handbook.demo/handbook_candidate`` with
   the verdict in its ``extra``; the promotion DAG, scheduled on that asset, reads it from
   ``triggering_asset_events`` and promotes only a passing version.

Trigger a build with ``{"degraded": true}`` to write a corrupted version and watch it stay out.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG, Asset, Param, get_current_context, task

from retrieval_eval.airflow.factory import build_dags
from retrieval_eval.airflow.gate import retrieval_gate
from retrieval_eval.airflow.group import evaluate_retrieval
from retrieval_eval.airflow.outcome import evaluation_asset_uri
from retrieval_eval.config.models import load_config

CONFIG = Path(__file__).resolve().parent / "index_build.yaml"
CANDIDATE = Asset("retrieval-index://handbook-candidate")
VERDICT = Asset(evaluation_asset_uri("handbook.demo", "handbook_candidate"))
# what the three DAGs share: no catch-up, one run at a time, this page as their documentation
SHARED = {
    "start_date": datetime(2024, 1, 1),
    "catchup": False,
    "max_active_runs": 1,
    "tags": ["retrieval-eval", "demo"],
    "doc_md": __doc__,
}
PARAMS = {"degraded": Param(False, type="boolean", description="Write a corrupted version.")}


@task
def build_index() -> str:
    """Write the next index version (corrupted when the run's ``degraded`` Param says so), point
    the candidate alias at it; return its name."""
    import demo_index

    degraded = get_current_context()["params"].get("degraded") is True
    version = demo_index.build_version(degraded=degraded)
    print(f"built index {version}{' (corrupted)' if degraded else ''}; candidate → {version}")
    return version


@task
def promote(version: str) -> str:
    """Point the live alias at ``version``: what production searches from now on."""
    import demo_index

    demo_index.swap_alias("live", version)
    print(f"promoted index {version}: live → {version}")
    return version


# 1. the gate inside the build DAG
with DAG("demo_index_build_gated", schedule=None, params=PARAMS, **SHARED):
    version = build_index()
    verdict = evaluate_retrieval(
        set="handbook.demo",
        retriever="handbook_candidate",
        config_path=CONFIG,
        index_version=version,
    )
    retrieval_gate(verdict) >> promote(version)


# 2. through assets: the build announces its version ...
@task(outlets=[CANDIDATE])
def announce(version: str) -> None:
    """The candidate's asset event, naming the version: it starts the evaluation DAG."""
    get_current_context()["outlet_events"][CANDIDATE].extra = {"index_version": version}


with DAG("demo_index_build", schedule=None, params=PARAMS, **SHARED):
    announce(build_index())


# ... the generated evaluation DAG (index_build.yaml's evaluation) records the verdict ...
globals().update(build_dags(load_config(CONFIG)))


# ... and the promotion DAG acts on the verdict's event
@task
def promote_if_passed() -> str:
    """Promote the version the verdict names, if it passed; say why not otherwise."""
    import demo_index

    from retrieval_eval.airflow.gate import gate_line
    from retrieval_eval.airflow.outcome import outcome_from_events

    outcome = outcome_from_events(get_current_context()["triggering_asset_events"])
    print(gate_line(outcome))
    if not outcome.passed or outcome.index_version is None:
        return f"kept live at {demo_index.alias_target('live')}: {outcome.state}"
    demo_index.swap_alias("live", outcome.index_version)
    return f"promoted index {outcome.index_version}"


with DAG("demo_index_promotion", schedule=VERDICT, **SHARED):
    promote_if_passed()

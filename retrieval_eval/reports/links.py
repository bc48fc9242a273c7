"""Where a run is seen: its page on the dashboard, and the Airflow DAG run that made it.

The dashboard's pages live under a base URL (the config's ``airflow.ui_base_url``, e.g.
``https://airflow.example.com/retrieval-eval``, where the Airflow plugin mounts it:
:data:`DASHBOARD_PREFIX`). A run made by a DAG carries the run key ``airflow:<dag_id>:<run_id>``
(:func:`run_key_for`), and Airflow 3's UI shows that DAG run at ``/dags/<dag_id>/runs/<run_id>``.
Airflow run ids hold ``:`` and ``+`` (``manual__2026-12-01T10:00:00+00:00``), so both parts are
percent-encoded, as Airflow's own log links encode them. A run key of any other form (a CLI
run's is a random hex string) names no DAG run.
"""

from __future__ import annotations

from typing import NamedTuple
from urllib.parse import quote

DASHBOARD_PREFIX = "/retrieval-eval"  # where the Airflow plugin mounts the dashboard
_AIRFLOW = "airflow"


class DagRunRef(NamedTuple):
    dag_id: str
    run_id: str


def run_key_for(dag_id: str, run_id: str) -> str:
    """The run key of a run (or replay) made by DAG run ``run_id`` of ``dag_id``."""
    return f"{_AIRFLOW}:{dag_id}:{run_id}"


def dag_run_of(run_key: str) -> DagRunRef | None:
    """The DAG run a run key names, or None when the run was not made by a DAG. A DAG id
    holds no ``:``, so everything after the second one is the run id, up to a ``#`` (a task
    group's run: ``airflow:<dag>:<run>#<group>``; Airflow's run ids hold no ``#``)."""
    prefix, _, rest = run_key.partition(":")
    dag_id, _, run_id = rest.partition(":")
    run_id = run_id.partition("#")[0]
    if prefix != _AIRFLOW or not dag_id or not run_id:
        return None
    return DagRunRef(dag_id, run_id)


def dag_run_url(airflow_url: str, ref: DagRunRef) -> str:
    """The DAG run's page in the Airflow UI at ``airflow_url`` ("" for the same origin)."""
    dag_id, run_id = quote(ref.dag_id, safe=""), quote(ref.run_id, safe="")
    return f"{airflow_url.rstrip('/')}/dags/{dag_id}/runs/{run_id}"


def airflow_url_of(dashboard_url: str | None) -> str | None:
    """The Airflow UI a dashboard base URL is mounted in (``https://af/retrieval-eval`` ->
    ``https://af``); None when the URL does not end with the plugin's mount point."""
    if not dashboard_url:
        return None
    base = dashboard_url.rstrip("/")
    return base[: -len(DASHBOARD_PREFIX)] if base.endswith(DASHBOARD_PREFIX) else None


def page_url(dashboard_url: str | None, path: str) -> str | None:
    """``path`` (``/runs/12``) under the dashboard's base URL; None without a base."""
    return f"{dashboard_url.rstrip('/')}{path}" if dashboard_url else None


def run_page_url(dashboard_url: str | None, run_id: int | None) -> str | None:
    """A stored run's page; None without a base URL or a run id (the run was not saved)."""
    return None if run_id is None else page_url(dashboard_url, f"/runs/{run_id}")


def replay_page_url(dashboard_url: str | None, replay_id: int | None) -> str | None:
    return None if replay_id is None else page_url(dashboard_url, f"/replays/{replay_id}")

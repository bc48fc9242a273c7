"""From a DAG run to its run on the dashboard: the persist task's extra link, and the base URL
the task log lines print.

Airflow 3.3 gives a task no way to set a note on its own DAG run (the execution API has none),
so the DAG-run side points at the run page through an operator extra link: once the task is
done, Airflow's task runner calls :meth:`RunPageLink.get_link` in the worker and keeps the URL
as an XCom (``_link_RunPageLink``), which the grid's task details show as a button. The API
server needs no import of this module: the serialized DAG names the link and its XCom key.

The dashboard's base URL is the config's ``airflow.ui_base_url`` when set, else the dashboard
in the Airflow whose ``[api] base_url`` the worker reads, else the plugin's mount point on the
Airflow UI's own origin (``/retrieval-eval``), which the grid's link button resolves.
"""

from __future__ import annotations

from typing import Any

from airflow.sdk import BaseOperatorLink

from retrieval_eval.reports.links import DASHBOARD_PREFIX, run_page_url


def dashboard_url(ui_base_url: str | None) -> str:
    """Where the run pages are, as seen from this Airflow (see the module docstring)."""
    if ui_base_url:
        return ui_base_url
    from airflow.sdk import conf

    base = conf.get("api", "base_url", fallback=None)
    return f"{base.rstrip('/')}{DASHBOARD_PREFIX}" if base else DASHBOARD_PREFIX


class RunPageLink(BaseOperatorLink):
    """The persist task's "Run page" button: the stored run's page on the dashboard, read from
    what the task returned (``run_id``); none when nothing was saved."""

    name = "Run page"

    def get_link(self, operator: Any, *, ti_key: Any) -> str:
        from airflow.sdk.execution_time.xcom import XCom

        recorded = XCom.get_value(ti_key=ti_key, key="return_value")
        run_id = recorded.get("run_id") if isinstance(recorded, dict) else None
        job = (getattr(operator, "op_kwargs", None) or {}).get("job") or {}
        return run_page_url(dashboard_url(job.get("ui_base_url")), run_id) or ""

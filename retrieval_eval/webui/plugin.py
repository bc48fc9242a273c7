"""The Airflow plugin: mounts the dashboard in the API server and adds it to the navigation.

Registered through the package's ``airflow.plugins`` entry point (and, for a plugins folder,
``plugins/retrieval_eval_plugin.py``). The app is built when Airflow loads plugins, which every
Airflow component does; building it is cheap (no store connection, no Airflow import: those happen
on the first request). The dashboard reads the store the DAGs write (see :mod:`source`).

The external view has a ``url_route``, so the Airflow UI shows the dashboard inside its own frame
at ``/plugin/retrieval-quality``; the page is same-origin, so the UI's ``_token`` cookie
authenticates it. Every route still requires a signed-in Airflow user (Airflow does not protect
plugin apps by itself).
"""

from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from retrieval_eval.webui.app import URL_PREFIX, create_app

PLUGIN_NAME = "retrieval_eval"
NAV_NAME = "Retrieval quality"


class RetrievalEvalPlugin(AirflowPlugin):
    """Retrieval-quality dashboard: overview, history charts, runs, side by side."""

    name = PLUGIN_NAME
    fastapi_apps = [  # noqa: RUF012 (AirflowPlugin declares these as class attributes)
        {"app": create_app(), "url_prefix": URL_PREFIX, "name": NAV_NAME},
    ]
    external_views = [  # noqa: RUF012
        {
            "name": NAV_NAME,
            "href": f"{URL_PREFIX}/",
            "url_route": "retrieval-quality",
            "destination": "nav",
            "category": "browse",
        },
    ]

"""The retrieval-eval dashboard for an Airflow plugins folder.

Airflow loads plugins from this folder AND from installed packages' ``airflow.plugins`` entry
points, and skips a second plugin with the same name, reporting it as a plugin import error. So
this file exposes the plugin class only when the installed retrieval-eval does not already
register it through its entry point (for example when the package is on ``sys.path`` without
being installed); installed, the entry point is the single registration.
"""

from __future__ import annotations

from importlib.metadata import entry_points

_ENTRY_POINT = "retrieval_eval.webui.plugin:RetrievalEvalPlugin"

if not any(ep.value == _ENTRY_POINT for ep in entry_points(group="airflow.plugins")):
    from retrieval_eval.webui.plugin import RetrievalEvalPlugin

    __all__ = ["RetrievalEvalPlugin"]

"""One DAG per (golden set, retriever) pair configured for retrieval-eval.

The config path comes from the environment variable ``RETRIEVAL_EVAL_CONFIG`` (cheapest), else the
Airflow Variable ``retrieval_eval_config``; with neither, the demo evaluation in ``examples/`` is
built so a newcomer sees a DAG at once. Parsing stays cheap: the config is read, nothing else.
"""

from __future__ import annotations

import os
from pathlib import Path

from retrieval_eval.airflow import build_dags
from retrieval_eval.config import CONFIG_ENV, load_config

DEMO_CONFIG = Path(__file__).resolve().parent.parent / "examples" / "retrieval_eval.yaml"
VARIABLE = "retrieval_eval_config"


def _config_path() -> str | None:
    path = os.environ.get(CONFIG_ENV)
    if path:
        return path
    try:
        from airflow.sdk import Variable

        path = Variable.get(VARIABLE, default=None)
    except Exception:  # no metadata database (e.g. a DagBag test): fall through to the demo
        path = None
    if path:
        return str(path)
    return str(DEMO_CONFIG) if DEMO_CONFIG.is_file() else None


_path = _config_path()
if _path:
    for _dag_id, _dag in build_dags(load_config(_path)).items():
        globals()[_dag_id] = _dag

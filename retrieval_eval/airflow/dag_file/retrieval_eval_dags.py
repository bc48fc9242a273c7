"""One Airflow DAG per (golden set, retriever) pair configured for retrieval-eval.

The config is ``$RETRIEVAL_EVAL_CONFIG`` (or, opted in, the Airflow Variable named by
``$RETRIEVAL_EVAL_CONFIG_VARIABLE``); with none, the demo in ``examples/`` is built. A config
that cannot be read fails this file's import with the reason, shown by Airflow as an import
error. See :mod:`retrieval_eval.airflow.dagfile`.
"""

from pathlib import Path

from retrieval_eval.airflow.dagfile import dags_for_file

globals().update(
    dags_for_file(Path(__file__).resolve().parent.parent / "examples" / "retrieval_eval.yaml")
)

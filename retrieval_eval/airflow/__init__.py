"""The Airflow layer: the DAG factory, the task group and gate for a team's own DAG, and alert
senders. The only Airflow-aware code in the package.

``build_evaluation_dag`` turns one configured evaluation into a DAG; ``build_dags`` builds every
evaluation of a config; ``evaluate_retrieval`` puts the labelled run in any DAG as a task group
and ``retrieval_gate`` stops what follows it on a regression. They are imported on first use,
which imports Airflow: Airflow itself imports :mod:`retrieval_eval.airflow.provider` while its
configuration loads, before ``airflow.sdk`` can be imported.
"""

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_eval.airflow.factory import build_dags, build_evaluation_dag, dag_id_for
    from retrieval_eval.airflow.gate import retrieval_gate
    from retrieval_eval.airflow.group import evaluate_retrieval

__all__ = [
    "build_dags",
    "build_evaluation_dag",
    "dag_id_for",
    "evaluate_retrieval",
    "retrieval_gate",
]

# where each name lives: imported when first asked for
_HOMES = {
    "build_dags": "factory",
    "build_evaluation_dag": "factory",
    "dag_id_for": "factory",
    "evaluate_retrieval": "group",
    "retrieval_gate": "gate",
}


def __getattr__(name: str) -> Any:
    if name in _HOMES:
        from importlib import import_module

        return getattr(import_module(f"retrieval_eval.airflow.{_HOMES[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

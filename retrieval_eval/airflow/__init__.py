"""The Airflow layer: the DAG factory, the one workflow adapter, alert senders. The only
Airflow-aware code in the package.

``build_evaluation_dag`` turns one configured evaluation into a DAG; ``build_dags`` builds every
evaluation of a config; ``evaluate_retrieval`` adds a labelled run to a team's own DAG as a task
group and returns its verdict, which ``retrieval_gate`` acts on. They are imported on first use, which imports Airflow: Airflow itself
imports :mod:`retrieval_eval.airflow.provider` while its configuration loads, before
``airflow.sdk`` can be imported.
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
_GROUP = {"evaluate_retrieval"}


def __getattr__(name: str) -> Any:
    if name == "retrieval_gate":
        from retrieval_eval.airflow import gate

        return gate.retrieval_gate
    if name in _GROUP:
        from retrieval_eval.airflow import group

        return getattr(group, name)
    if name in __all__:
        from retrieval_eval.airflow import factory

        return getattr(factory, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

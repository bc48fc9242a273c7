"""The Airflow layer: the DAG factory and alert senders. The only Airflow-aware code in the package.

``build_evaluation_dag`` turns one configured evaluation into a DAG; ``build_dags`` builds every
evaluation of a config. Importing this package imports Airflow.
"""

from retrieval_eval.airflow.factory import build_dags, build_evaluation_dag, dag_id_for

__all__ = ["build_dags", "build_evaluation_dag", "dag_id_for"]

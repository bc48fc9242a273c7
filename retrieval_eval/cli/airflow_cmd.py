"""``retrieval-eval airflow init DAGS_FOLDER``: put the DAG file in a deployment's DAGs folder.

The DAG file ships inside the package (``retrieval_eval/airflow/dag_file/``), so a deployment
that installed the package from an index needs no git checkout. It is written whole or not at
all (:func:`retrieval_eval.safety.files.write_file`); a different file already there is kept
unless ``--force`` (exit 2 naming it), and the same file is left as it is.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.output_file import output_errors
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.safety.files import write_file

DAG_FILE_NAME = "retrieval_eval_dags.py"


def dag_file_text() -> str:
    """The DAG file as the package ships it."""
    return files("retrieval_eval.airflow").joinpath("dag_file", DAG_FILE_NAME).read_text("utf-8")


@cli.group("airflow")
def airflow_group() -> None:
    """Set up an Airflow deployment for retrieval-eval."""


@airflow_group.command("init")
@click.argument("dags_folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--force", is_flag=True, help="Replace a different DAG file already there.")
def init(dags_folder: Path, force: bool) -> None:
    """Write the DAG file (retrieval_eval_dags.py) into DAGS_FOLDER, Airflow's [core] dags_folder.

    The DAGs it defines come from the config named by $RETRIEVAL_EVAL_CONFIG in the Airflow
    processes' environment.
    """
    target = dags_folder / DAG_FILE_NAME
    text = dag_file_text()
    try:
        existing = target.read_text("utf-8") if target.is_file() else None
    except (OSError, UnicodeDecodeError):
        existing = ""  # unreadable: different from ours
    if existing == text:
        click.echo(f"{target}: already the current DAG file; nothing written")
        return
    if existing is not None and not force:
        raise InvalidInputError(
            f"{target}: a different file is already there; it is kept. Compare it with "
            "`retrieval-eval airflow init` into an empty folder, or replace it with --force"
        )
    with output_errors(str(target), None):
        write_file(target, text, make_folder=True)
    click.echo(f"{target}: written; set $RETRIEVAL_EVAL_CONFIG to your config's path for Airflow")

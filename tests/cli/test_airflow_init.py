"""``retrieval-eval airflow init``: the packaged DAG file written whole, never over another file.

Loading what it writes in a DagBag is tests/airflow/test_provider.py's part.
"""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result
from helpers import ROOT, read_only, tmpfs

from retrieval_eval.cli import cli


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, ["airflow", "init", *args], prog_name="retrieval-eval")


def test_it_writes_the_dag_file_into_a_new_folder_and_leaves_the_same_file_alone(
    tmp_path: Path,
) -> None:
    dags = tmp_path / "airflow" / "dags"
    first = invoke(str(dags))
    assert first.exit_code == 0, first.output
    written = dags / "retrieval_eval_dags.py"
    assert written.read_bytes() == (ROOT / "dags" / "retrieval_eval_dags.py").read_bytes()
    again = invoke(str(dags))
    assert again.exit_code == 0 and "nothing written" in again.output


def test_a_different_file_is_kept_unless_forced(tmp_path: Path) -> None:
    target = tmp_path / "retrieval_eval_dags.py"
    target.write_text("# my own DAG file\n")
    refused = invoke(str(tmp_path))
    assert refused.exit_code == 2
    assert str(target) in refused.output and "--force" in refused.output
    assert target.read_text() == "# my own DAG file\n"
    forced = invoke(str(tmp_path), "--force")
    assert forced.exit_code == 0, forced.output
    assert target.read_bytes() == (ROOT / "dags" / "retrieval_eval_dags.py").read_bytes()


def test_a_read_only_dags_folder_is_bad_input_naming_it(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "dags") as dags:
        read_only(dags)
        done = invoke(str(dags))
        assert done.exit_code == 2
        assert f"{dags / 'retrieval_eval_dags.py'}: cannot write it" in done.output
        assert not (dags / "retrieval_eval_dags.py").exists()

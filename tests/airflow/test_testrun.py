"""``testrun``'s command line: ``--plan`` with ``--log``, its help and a bad plan file.

The ``--log`` test runs the real module in a subprocess over a DAG folder whose one file prints a
marker when Airflow parses it: the marker (Airflow's output) must land in the log file, not on
stdout. The plan names a DAG that does not exist, so no metadata DB or DAG run is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval_eval.airflow.testrun import main

pytestmark = pytest.mark.airflow

MARKER = "PARSED-MARKER from the DAG folder"


def test_plan_with_log_sends_airflow_output_to_the_file(tmp_path: Path) -> None:
    dags = tmp_path / "dags"
    dags.mkdir()
    # DagBag's safe mode parses only files that mention both words
    (dags / "marker.py").write_text(f"# an airflow dag file\nprint({MARKER!r})\n", "utf-8")
    plan, log = tmp_path / "plan.json", tmp_path / "plan.log"
    plan.write_text(json.dumps([{"dag_id": "no_such_dag"}, {"dag_id": "nor_this"}]), "utf-8")
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path / "home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(dags),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    args = ["--plan", str(plan), "--log", str(log)]
    proc = subprocess.run(
        [sys.executable, "-m", "retrieval_eval.airflow.testrun", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert log.exists(), proc.stdout[-2000:]
    assert log.read_text("utf-8").count(MARKER) == 2  # parsed once per planned run
    assert MARKER not in proc.stdout + proc.stderr
    *summaries, last = proc.stdout.splitlines()
    assert [s.split(":")[0] for s in summaries] == ["DAG no_such_dag", "DAG nor_this"]
    assert all(f"(Airflow log: {log})" in s for s in summaries)
    assert [o["state"] for o in json.loads(last)] == ["unknown_dag", "unknown_dag"]
    assert proc.returncode == 1


def test_help_explains_the_plan_format(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "see above" not in out
    for words in ('"dag_id"', '"conf"', '"env"', "null unsets", "--log FILE", "exit codes"):
        assert words in out, words
    # the raw formatter keeps the example's lines as written
    assert '    "env": {"RETRIEVAL_EVAL_CONFIG"' in out


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('[{"dag_id": "a"},\n oops]', "line 2: not JSON"),
        ('{"dag_id": "a"}', "expected a JSON list"),
        ('[{"dag_id": "a"}, {"conf": {}}]', 'entry 1: needs a "dag_id"'),
    ],
)
def test_a_bad_plan_file_is_a_usage_error_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, expected: str
) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(content, "utf-8")
    with pytest.raises(SystemExit) as info:
        main(["--plan", str(plan), "--log", str(tmp_path / "plan.log")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert f"plan file {plan}" in err and expected in err
    assert not (tmp_path / "plan.log").exists()  # refused before anything ran


def test_a_missing_plan_file_and_dag_id_with_plan_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as info:
        main(["--plan", str(tmp_path / "absent.json")])
    assert info.value.code == 2 and "cannot be read" in capsys.readouterr().err
    with pytest.raises(SystemExit) as info:
        main(["some_dag", "--plan", str(tmp_path / "absent.json")])
    assert info.value.code == 2 and "not both" in capsys.readouterr().err

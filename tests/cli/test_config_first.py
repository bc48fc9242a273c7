"""Every option, the store URL included, is checked before any retriever code is imported:
in the CLI's ``run`` and in the DAG's first task. The team's module leaves a marker file and
sleeps when imported, so a check that came after it would show (and cost)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from retrieval_eval.errors import InvalidInputError

SET = """identifier: first.check
questions:
  - {id: q1, question: where is the handbook, form: match, expected_document_ids: [a]}
"""
NOISY = """import pathlib, time
pathlib.Path(__file__).with_name("IMPORTED").write_text("imported")
time.sleep(2)

def make_retriever():
    return lambda question, limit: ["a"]
"""
CLI = str(Path(sys.executable).parent / "retrieval-eval")
# (a bare path, `results.sqlite`, is a SQLite file beside the config: a misspelt scheme is not)
BAD_STORES = ["mysql://eval@db/results", "sqlite://", "postgres:/db"]


@pytest.fixture
def team(tmp_path: Path) -> Path:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "noisy_first_mod.py").write_text(NOISY, encoding="utf-8")
    (tmp_path / "set.yaml").write_text(SET, encoding="utf-8")
    return tmp_path


def write_config(folder: Path, store: str, **extra: object) -> Path:
    config = {
        **extra,
        "store": store,
        "sets": ["set.yaml"],
        "retrievers": {
            "noisy": {
                "type": "python",
                "factory": "noisy_first_mod:make_retriever",
                "paths": ["code"],
            }
        },
    }
    path = folder / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return path


@pytest.mark.parametrize("retriever", ["noisy", "noisy_first_mod:make_retriever"])
def test_run_refuses_a_bad_store_before_importing_the_retriever(team: Path, retriever: str) -> None:
    config = write_config(team, BAD_STORES[0])
    env = {k: v for k, v in os.environ.items() if k not in ("RETRIEVAL_EVAL_DB",)}
    done = subprocess.run(
        [CLI, "run", "first.check", retriever, "--config", str(config)],
        cwd=team / "code",  # the import path resolves here, so only the order can stop it
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "unsupported store backend 'mysql'" in done.stderr
    assert not (team / "code" / "IMPORTED").exists()


@pytest.mark.parametrize("store", BAD_STORES)
def test_the_dags_first_task_refuses_a_bad_store_before_importing_the_retriever(
    team: Path, store: str
) -> None:
    from retrieval_eval.config.models import load_config
    from retrieval_eval.store import resolve_store_url
    from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

    config = write_config(team, store)
    job = LabelledRunJob(config_path=str(config), set="first.check", retriever="noisy")
    workflow = LabelledRun(job, store_url=lambda: resolve_store_url(None, load_config(config)))
    with pytest.raises(InvalidInputError, match="store"):
        workflow.plan()
    assert not (team / "code" / "IMPORTED").exists()
    assert "noisy_first_mod" not in sys.modules


def test_a_bad_dashboard_url_is_refused_before_the_retriever_is_imported(team: Path) -> None:
    """airflow.ui_base_url goes into alerts, task logs and the DAG run's extra link: one that is
    not an absolute http(s) URL is a config error, named by field, its value not echoed (a query
    may hold a token), before any retriever code runs."""
    bad = {"ui_base_url": "airflow.example/retrieval-eval?token=s3cret"}
    config = write_config(team, "sqlite:///results.sqlite", airflow=bad)
    done = subprocess.run(
        [CLI, "run", "first.check", "noisy", "--config", str(config)],
        cwd=team,
        env={k: v for k, v in os.environ.items() if k != "RETRIEVAL_EVAL_DB"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stderr
    assert f"{config}: airflow.ui_base_url: not an absolute http(s) URL" in done.stderr
    assert "s3cret" not in done.stderr
    assert not (team / "code" / "IMPORTED").exists()

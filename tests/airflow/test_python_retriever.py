"""The docs' "How your retriever code reaches the workers" (operations/airflow.md), run as written: the team's module and
its config live OUTSIDE the project, ``paths: [../retrievers]`` is relative to the config, and
both the real CLI (from another working directory) and a ``dag.test()`` run find the module."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest
from dag_helpers import BIN, EXAMPLES, ROOT, run_dag

from retrieval_eval.airflow.factory import dag_id_for

PAGE = "docs/operations/airflow.md"
SECTION = "## How your retriever code reaches the workers"


def readme_blocks() -> dict[str, str]:
    """The section's python, yaml and shell blocks, by language."""
    text = (ROOT / PAGE).read_text(encoding="utf-8")
    section = text[text.index(SECTION) + len(SECTION) :]
    section = section.split("\n## ", 1)[0]
    return dict(re.findall(r"```(python|yaml|shell)\n(.*?)```", section, re.DOTALL))


@pytest.fixture(scope="module")
def layout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The docs' layout in a folder outside the project: retrievers/, config/, corpus/."""
    root = tmp_path_factory.mktemp("team")
    blocks = readme_blocks()
    module, config = (
        blocks[lang].split("\n", 1) for lang in ("python", "yaml")
    )  # each block's first line is "# <its path>"
    for header, body in (module, config):
        path = root / header.removeprefix("# ").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body, encoding="utf-8")
    shutil.copytree(EXAMPLES / "golden", root / "config" / "golden")
    shutil.copytree(EXAMPLES / "corpus", root / "corpus")
    return root


def test_the_readme_commands_work_from_another_folder(layout: Path) -> None:
    elsewhere = layout / "elsewhere"
    elsewhere.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_EVAL_")},
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "RETRIEVAL_EVAL_HOME": str(layout / "home"),
    }
    lines = readme_blocks()["shell"].splitlines()
    commands = [(i, line) for i, line in enumerate(lines) if line and not line.startswith("#")]
    assert len(commands) == 2
    for i, command in commands:
        args = [a.replace("config/", f"{layout}/config/") for a in shlex.split(command)]
        done = subprocess.run(
            args, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        for shown in lines[i + 1 :]:
            if not shown.startswith("#   "):
                break
            assert shown.removeprefix("#   ") in done.stdout
        if args[1] == "retrievers":
            assert "Latency:" in done.stdout and "Ids (" in done.stdout
    assert "Saved as run 1" in done.stdout


def test_a_dag_of_the_readme_config_runs_and_names_the_retriever_by_its_key(
    layout: Path, airflow_env: dict[str, str]
) -> None:
    from retrieval_eval.store import open_store

    store = f"sqlite:///{layout / 'dag.sqlite'}"
    outcome = run_dag(
        airflow_env,
        dag_id_for("handbook.demo", "team_search"),
        extra_env={
            "RETRIEVAL_EVAL_CONFIG": str(layout / "config" / "retrieval_eval.yaml"),
            "RETRIEVAL_EVAL_DB": store,
        },
    )
    assert outcome["state"] == "success", outcome["log"][-4000:]
    with open_store(store) as opened:
        (run,) = opened.history("handbook.demo", "team_search", limit=5, questions=False)
    assert run.result.retriever == "team_search"

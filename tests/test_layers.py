"""The package's layers: tools/folder_cycles.py finds folders that import each other (imports
inside functions too), and the import-linter contract `make lint` runs is kept and notices a new
violation."""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT_IMPORTS = Path(sys.executable).parent / "lint-imports"


def _tool() -> Any:
    spec = importlib.util.spec_from_file_location(
        "folder_cycles", ROOT / "tools" / "folder_cycles.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _package(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def test_a_function_level_import_makes_a_pair(tmp_path: Path, monkeypatch: Any) -> None:
    _package(
        tmp_path,
        {
            "layered/__init__.py": "",
            "layered/low/__init__.py": "",
            "layered/low/base.py": "def helper():\n    from layered.high.top import run\n",
            "layered/high/__init__.py": "",
            "layered/high/top.py": "from layered.low.base import helper\nrun = helper\n",
            "layered/side/__init__.py": "",
            "layered/side/alone.py": "from layered.low import base\n",
        },
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    graph = grimp.build_graph("layered", cache_dir=None)
    assert _tool().cycles(graph, "layered") == [("layered.high", "layered.low")]


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter (extra dev) not installed")
def test_the_contract_is_kept_and_fails_on_a_new_upward_import(tmp_path: Path) -> None:
    kept = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr

    # a copy of the package where the domain imports the store inside a function
    copy = tmp_path / "tree"
    shutil.copytree(ROOT / "retrieval_eval", copy / "retrieval_eval")
    shutil.copy(ROOT / ".importlinter", copy / ".importlinter")
    safety = copy / "retrieval_eval" / "safety" / "limits.py"
    safety.write_text(
        safety.read_text(encoding="utf-8")
        + "\n\ndef _upward() -> None:\n    from retrieval_eval.store import url  # noqa: F401\n",
        encoding="utf-8",
    )
    broken = subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=copy,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(copy), "PATH": "/usr/bin:/bin"},
    )
    assert broken.returncode == 1, broken.stdout + broken.stderr
    assert "retrieval_eval.safety.limits -> retrieval_eval.store.url" in broken.stdout

"""The package as a whole: its public surface, its Airflow boundary, its declared entry points."""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import retrieval_eval
from retrieval_eval.retrievers.base import as_retriever

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "retrieval_eval"
AIRFLOW_AWARE = (PACKAGE / "airflow", PACKAGE / "webui")

VERBS = [
    "load_golden_set",
    "dump_golden_set",
    "labels_fingerprint",
    "evaluate",
    "score_questions",
    "summarise",
    "load_config",
    "run_evaluation",
    "GoldenQuestion",
    "GoldenQuestionSet",
    "QuestionForm",
    "GoldenSetRegistry",
    "EvaluatableRetriever",
    "FunctionRetriever",
    "RetrieverRegistry",
    "ChunkMapper",
    "RunResult",
    "RunSettings",
    "QuestionResult",
    "Config",
    "RetrievalEvalError",
]


@pytest.mark.parametrize("name", VERBS)
def test_public_verbs_import_from_the_root(name: str) -> None:
    assert name in retrieval_eval.__all__
    value = getattr(retrieval_eval, name)
    assert value is getattr(importlib.import_module(value.__module__), name)


def test_every_export_resolves() -> None:
    for name in retrieval_eval.__all__:
        assert getattr(retrieval_eval, name) is not None
    with pytest.raises(AttributeError):
        _ = retrieval_eval.no_such_thing  # type: ignore[attr-defined]


def test_from_import_works_in_a_fresh_interpreter() -> None:
    script = (
        "import sys\n"
        "import retrieval_eval\n"
        "lazy = 'pandas' not in sys.modules\n"
        "from retrieval_eval import evaluate, load_golden_set, FunctionRetriever\n"
        "print(lazy, callable(evaluate), callable(load_golden_set), FunctionRetriever.__name__)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "FunctionRetriever"]


# Lazy Airflow imports the core may make, by (file, function): each needs a reason.
LAZY_AIRFLOW_ALLOWED = {
    # reads an Airflow connection only when a config names ``connection_id`` (http,
    # postgres_fts); without Airflow installed it raises a ConfigError saying so
    ("retrieval_eval/retrievers/secrets.py", "airflow_connection"),
}


def airflow_imports(path: Path) -> list[tuple[str, int, str | None]]:
    """Every Airflow import in a file: (module, line, enclosing function or None).

    Covers ``import airflow...``, ``from airflow... import`` and
    ``importlib.import_module("airflow...")``, at module level or inside functions.
    """
    found: list[tuple[str, int, str | None]] = []

    def visit(node: ast.AST, function: str | None) -> None:
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names = [node.args[0].value]
        found.extend(
            (name, node.lineno, function) for name in names if name.split(".")[0] == "airflow"
        )
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            function = node.name
        for child in ast.iter_child_nodes(node):
            visit(child, function)

    visit(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)), None)
    return found


def test_the_evaluation_core_never_imports_airflow() -> None:
    core = [
        path
        for path in sorted(PACKAGE.rglob("*.py"))
        if not any(path.is_relative_to(folder) for folder in AIRFLOW_AWARE)
    ]
    assert len(core) > 15  # the scan really looks at the package
    offenders = []
    for path in core:
        where = path.relative_to(ROOT).as_posix()
        for module, line, function in airflow_imports(path):
            if (where, function) not in LAZY_AIRFLOW_ALLOWED:
                offenders.append(f"{where}:{line} imports {module} (in {function or 'module'})")
    assert offenders == []


def test_the_scan_finds_airflow_imports(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import airflow\n"
        "def f():\n    from airflow.sdk import dag\n"
        "import importlib\nimportlib.import_module('airflow.models')\nimport airflowish\n"
    )
    assert airflow_imports(sample) == [
        ("airflow", 1, None),
        ("airflow.sdk", 3, "f"),
        ("airflow.models", 5, None),
    ]


def test_declared_retriever_entry_points_build_without_options() -> None:
    # the retrieval_eval.retrievers group is for ready-to-run retrievers; adapter types that
    # need options belong in BUILTIN_ADAPTERS or the retrieval_eval.adapters group
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    declared = project["project"].get("entry-points", {}).get("retrieval_eval.retrievers", {})
    for name, target in declared.items():
        module, _, attribute = target.partition(":")
        obj = getattr(importlib.import_module(module), attribute)
        retriever = as_retriever(obj, name)
        assert hasattr(retriever, "retrieve"), name


def test_console_script_target_exists() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    module, _, attribute = project["project"]["scripts"]["retrieval-eval"].partition(":")
    assert callable(getattr(importlib.import_module(module), attribute))


def test_the_package_root_holds_the_public_verbs_and_the_base_layer_only() -> None:
    """Every concept lives in a folder named for it, and the docs' "How it fits together"
    (docs/concepts/architecture.md) lists each folder the package has. The root holds the lazy
    public verbs and the base layer every folder may import (errors.py, paths.py: the home
    folder), nothing else."""
    root = sorted(path.name for path in PACKAGE.glob("*.py"))
    assert root == ["__init__.py", "errors.py", "paths.py"]
    folders = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists()}
    page = (ROOT / "docs" / "concepts" / "architecture.md").read_text(encoding="utf-8")
    layout = page.split("# How it fits together", 1)[1].split("```")[1]
    assert set(re.findall(r"^  (\w+)/ ", layout, flags=re.MULTILINE)) == folders

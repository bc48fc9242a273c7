"""Every built-in adapter type is listed by `retrievers list` and importable without its extra."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.retrievers.registry import BUILTIN_ADAPTERS, import_object

TYPES = ["chunked", "dense", "http", "langchain", "lexical", "postgres_fts", "run_file"]


def test_all_adapter_types_are_registered_and_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    assert set(TYPES) <= set(BUILTIN_ADAPTERS)
    result = CliRunner().invoke(cli, ["retrievers", "list"])
    assert result.exit_code == 0, result.output
    listed = result.output.split("Adapter types:")[1]
    for name in TYPES:
        assert f"  {name}\t{BUILTIN_ADAPTERS[name]}" in listed


@pytest.mark.parametrize("name", TYPES)
def test_adapter_module_imports_without_optional_extras(name: str) -> None:
    adapter = import_object(BUILTIN_ADAPTERS[name])
    assert callable(adapter.from_options)

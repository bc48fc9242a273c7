"""Every built-in adapter type is listed by `retrievers list` and importable without its extra."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.extras import ADAPTER_EXTRAS, installed, pip_command
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.retrievers.registry import BUILTIN_ADAPTERS, import_object

TYPES = [
    "chroma",
    "chunked",
    "dense",
    "haystack",
    "http",
    "lancedb",
    "langchain",
    "lexical",
    "llamaindex",
    "postgres_fts",
    "qdrant",
    "run_file",
]


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


def test_retrievers_list_says_which_extras_are_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    listed = CliRunner().invoke(cli, ["retrievers", "list"]).output.split("Adapter types:")[1]
    lines = {line.split("\t")[0].strip(): line for line in listed.splitlines() if line}
    for name, (extra, _module) in ADAPTER_EXTRAS.items():
        if installed(name):
            assert lines[name].endswith("\tinstalled"), lines[name]
        else:
            assert lines[name].endswith(
                f"\tnot installed: pip install 'rag-retrieval-eval[{extra}]'"
            )
    assert lines["lexical"].endswith("LexicalRetriever")  # no extra, nothing said


@pytest.mark.parametrize("name", ["qdrant", "chroma", "lancedb", "llamaindex", "haystack"])
def test_a_missing_extra_names_its_pip_command(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import fail as it does where the package is absent
    extra, module = ADAPTER_EXTRAS[name]
    monkeypatch.setitem(sys.modules, module, None)
    options = {"collection": "docs", "embedding": "m:f", "path": ".", "factory": "m:f"}
    with pytest.raises(
        ConfigError,
        match=rf"retrievers\.docs: the {name} adapter needs the extra "
        rf"'{extra}'.*pip install 'rag-retrieval-eval\[{extra}\]'",
    ):
        import_object(BUILTIN_ADAPTERS[name]).from_options("docs", options, BuildContext())
    assert installed(name) is False


@pytest.mark.parametrize("store", ["qdrant", "chroma", "lancedb", "llamaindex", "haystack"])
def test_the_docs_recipe_of_every_vector_store_is_a_valid_config(
    tmp_path: Path, store: str
) -> None:
    # the YAML blocks of the store's page in docs/adapters/ (its recipe), checked option by
    # option as a config is (a renamed or misspelt option there fails here); nothing is connected
    import re

    import yaml

    from retrieval_eval.retrievers.options import parse_options

    docs = Path(__file__).resolve().parents[2] / "docs" / "adapters"
    page = (docs / f"{store}.md").read_text(encoding="utf-8")
    recipes: dict[str, dict] = {}
    for block in re.findall(r"```yaml\n(.*?)```", page, re.S):
        recipes.update(yaml.safe_load(block)["retrievers"])
    assert [spec["type"] for spec in recipes.values()] == [store]
    for identifier, spec in recipes.items():
        options = {k: v for k, v in spec.items() if k != "type"}
        adapter = import_object(BUILTIN_ADAPTERS[spec["type"]])
        parse_options(adapter.options_model, identifier, options, BuildContext(base_dir=tmp_path))
    assert pip_command(ADAPTER_EXTRAS[store][0]) in page

"""Where retrievers come from: config types, entry points and ``module:attribute`` paths."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from retrieval_eval.errors import ConfigError, RetrieverError, UnknownNameError
from retrieval_eval.retrievers.base import FunctionRetriever, as_retriever
from retrieval_eval.retrievers.lexical import LexicalRetriever
from retrieval_eval.retrievers.registry import RetrieverRegistry, adapter_types, import_object

ENTRY_POINTS = Path(__file__).resolve().parents[1] / "fixtures" / "entry_points"

USER_MODULE = """
class ClassRetriever:
    identifier = "from_class"
    def retrieve(self, question, limit):
        return ["class-doc"]

class Nameless:
    def retrieve(self, question, limit):
        return ["nameless-doc"]

def make_retriever():
    return ClassRetriever()

def make_function():
    return plain

instance = Nameless()

def plain(question, limit):
    return [f"plain:{limit}"]

def plain_with_default(question, limit=5):
    return ["default-doc"]

class Namespace:
    nested = staticmethod(plain)

not_a_retriever = 42

def broken_factory():
    raise RuntimeError("cannot reach the index")
"""


@pytest.fixture
def user_module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest):
    """A module in the cwd (not on sys.path before), named per test so imports never collide."""
    name = "user_retrievers_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{name}.py").write_text(USER_MODULE)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    return name


@pytest.fixture
def installed_testpkg(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(ENTRY_POINTS))


@pytest.mark.parametrize(
    "attribute,identifier,ranking",
    [
        ("ClassRetriever", "from_class", ["class-doc"]),  # a class: instantiated
        ("make_retriever", "from_class", ["class-doc"]),  # a factory: called
        ("make_function", None, ["plain:12"]),  # a factory returning a function
        ("instance", None, ["nameless-doc"]),  # an instance: used as is, given the path as id
        ("plain", None, ["plain:12"]),  # a plain f(question, limit)
        ("plain_with_default", None, ["default-doc"]),
        ("Namespace.nested", None, ["plain:12"]),  # dotted attribute
    ],
)
def test_import_path_from_the_cwd(
    user_module: str, attribute: str, identifier: str | None, ranking: list[str]
) -> None:
    path = f"{user_module}:{attribute}"
    retriever = RetrieverRegistry().build(path)
    assert retriever.identifier == (identifier or path)
    assert list(retriever.retrieve("q", 12)) == ranking


def test_plain_function_becomes_a_function_retriever(user_module: str) -> None:
    retriever = RetrieverRegistry().build(f"{user_module}:plain")
    assert isinstance(retriever, FunctionRetriever)
    assert retriever.max_concurrency == 1


def test_an_import_path_never_scans_the_entry_points(
    user_module: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A name with a colon is an import path, as RetrieverRegistry.check reads it: building it
    reads no distribution's entry points (every installed one, ~30 ms in an Airflow venv)."""

    def scanned(self: RetrieverRegistry) -> dict[str, object]:
        raise AssertionError("entry points scanned for an import path")

    monkeypatch.setattr(RetrieverRegistry, "_entry_points", scanned)
    assert RetrieverRegistry().build(f"{user_module}:plain").identifier == f"{user_module}:plain"


def test_import_path_errors(user_module: str) -> None:
    registry = RetrieverRegistry()
    with pytest.raises(UnknownNameError, match="cannot import module 'no_such_module_xyz'"):
        registry.build("no_such_module_xyz:thing")
    with pytest.raises(UnknownNameError, match=f"module '{user_module}' has no attribute 'nope'"):
        registry.build(f"{user_module}:nope")
    with pytest.raises(RetrieverError, match="int is not a retriever"):
        registry.build(f"{user_module}:not_a_retriever")
    with pytest.raises(UnknownNameError, match="not an import path"):
        import_object("module_only:")


def test_factory_that_raises_is_a_retriever_error(user_module: str) -> None:
    path = f"{user_module}:broken_factory"
    with pytest.raises(RetrieverError) as info:
        RetrieverRegistry().build(path)
    assert str(info.value) == (
        f"cannot build retriever {path!r}: RuntimeError: cannot reach the index"
    )


def test_module_that_fails_to_import_is_a_retriever_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_user_module.py").write_text("def retrieve(q, k):\n    return [\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(RetrieverError, match=r"broken_user_module:retrieve'.*SyntaxError"):
        RetrieverRegistry().build("broken_user_module:retrieve")


def test_class_needing_arguments_is_a_retriever_error(installed_testpkg: None) -> None:
    # an adapter class is not a named retriever: building it bare must fail cleanly
    with pytest.raises(RetrieverError, match="cannot build retriever"):
        RetrieverRegistry().build("retrieval_eval_testpkg:ConstantAdapter")


def test_adapter_that_fails_to_build_names_retriever_and_type(installed_testpkg: None) -> None:
    registry = RetrieverRegistry({"mine": {"type": "failing"}})
    with pytest.raises(RetrieverError) as info:
        registry.build("mine")
    assert str(info.value) == (
        "cannot build retriever 'mine' (type 'failing'): ConnectionError: index unreachable"
    )


def test_config_type_and_options(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("alpha beta")
    registry = RetrieverRegistry(
        {"mine": {"type": "lexical", "corpus": "docs", "stemmer": None}}, base_dir=tmp_path
    )
    retriever = registry.build("mine")
    assert isinstance(retriever, LexicalRetriever)
    assert retriever.identifier == "mine"
    assert retriever.options.corpus == tmp_path / "docs"  # relative to the config folder
    assert retriever.options.stemmer is None
    assert retriever.retrieve("alpha", 12) == ["a.md"]


def test_unknown_adapter_type_and_missing_type(tmp_path: Path) -> None:
    registry = RetrieverRegistry(
        {"a": {"type": "elastic"}, "b": {"corpus": "x"}}, base_dir=tmp_path, source="cfg.yaml"
    )
    with pytest.raises(ConfigError) as info:
        registry.build("a")
    assert str(info.value).startswith("cfg.yaml: retrievers.a.type: unknown adapter type 'elastic'")
    assert "available types: " in str(info.value) and "lexical" in str(info.value)
    with pytest.raises(ConfigError, match=r"cfg\.yaml: retrievers\.b: missing 'type'"):
        registry.build("b")


def test_unknown_retriever_lists_configured_ids_and_adapter_types() -> None:
    registry = RetrieverRegistry(
        {"bm25_small": {"type": "lexical"}, "bm25_big": {"type": "lexical"}}
    )
    with pytest.raises(UnknownNameError) as info:
        registry.build("bm25_smal")
    message = str(info.value)
    assert message.startswith(
        "unknown retriever 'bm25_smal' (did you mean 'bm25_small'?); configured: bm25_small, bm25_big"
    )
    assert "adapter types available" in message and "lexical" in message
    assert "module:attribute" in message


def test_entry_point_retrievers(installed_testpkg: None) -> None:
    registry = RetrieverRegistry({"mine": {"type": "lexical"}})
    names = registry.names()
    assert names[0] == "mine"  # configured first
    assert {"pkg_echo", "pkg_first"} <= set(names)
    echo = registry.build("pkg_echo")  # a class
    assert echo.identifier == "pkg_echo"
    assert list(echo.retrieve("x y", 12)) == ["x", "y"]
    first = registry.build("pkg_first")  # a plain function
    assert first.identifier == "pkg_first" and list(first.retrieve("q", 12)) == ["a"]
    assert registry.describe("pkg_first") == "entry point retrieval_eval_testpkg:first_document"
    assert registry.describe("mine").startswith("type 'lexical' from")
    # an entry point named "pkg:colon" cannot be chosen by name (that is an import path): not
    # offered, and asking for it says what an import path says
    assert "pkg:colon" not in names
    with pytest.raises(UnknownNameError, match="cannot import module 'pkg' for 'pkg:colon'"):
        registry.build("pkg:colon")


def test_entry_point_adapter_types(installed_testpkg: None) -> None:
    assert adapter_types()["constant"] == "retrieval_eval_testpkg:ConstantAdapter"
    registry = RetrieverRegistry({"fixed": {"type": "constant", "ids": ["x", "y"]}})
    assert list(registry.build("fixed").retrieve("anything", 1)) == ["x"]


def test_no_entry_points_without_the_package() -> None:
    assert "constant" not in adapter_types()
    assert "pkg_echo" not in RetrieverRegistry().names()


def test_as_retriever_rejects_non_retrievers() -> None:
    with pytest.raises(TypeError, match="str is not a retriever"):
        as_retriever("text", "x")


def test_function_retriever_defaults_to_the_function_name() -> None:
    def my_search(question: str, limit: int) -> list[str]:
        return []

    assert FunctionRetriever(my_search).identifier == "my_search"
    assert repr(FunctionRetriever(my_search)) == "FunctionRetriever('my_search')"

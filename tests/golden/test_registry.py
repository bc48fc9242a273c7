"""The set registry: config files, directories, installed packages; duplicates and unknown names."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_eval.config.models import load_config
from retrieval_eval.errors import GoldenSetError, InvalidInputError, UnknownNameError
from retrieval_eval.golden.registry import GoldenSetRegistry

FIXTURES = Path(__file__).parent / "fixtures"
ENTRY_POINTS = Path(__file__).parent.parent / "fixtures" / "entry_points"


@pytest.fixture
def installed_testpkg(monkeypatch: pytest.MonkeyPatch) -> None:
    """A fake installed package (a .dist-info folder on sys.path) providing set 'pkg.sample'."""
    monkeypatch.syspath_prepend(str(ENTRY_POINTS))


def test_file_and_lookup() -> None:
    registry = GoldenSetRegistry()
    registry.add_file(FIXTURES / "mini.yaml")
    assert registry.names() == ["mini.faq"]
    assert "mini.faq" in registry
    assert registry.get("mini.faq").name == "Mini FAQ"
    assert registry.source("mini.faq") == str(FIXTURES / "mini.yaml")
    assert [s.identifier for s in registry] == ["mini.faq"]


def test_directory_registers_every_set_file(tmp_path: Path) -> None:
    for name in ("mini.yaml", "mini.jsonl", "mini-faq.csv"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    (tmp_path / "notes.txt").write_text("not a set")
    registry = GoldenSetRegistry()
    registry.add_directory(tmp_path)
    assert registry.names() == ["mini", "mini.faq", "mini_faq"]


def test_directory_reports_problems_of_every_file(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("identifier: a\nquestions: []\n")
    (tmp_path / "b.jsonl").write_text('{"id": "q", "question": "", "form": "match"}\n')
    with pytest.raises(GoldenSetError) as info:
        GoldenSetRegistry().add_directory(tmp_path)
    problems = info.value.problems
    assert len(problems) == 2
    assert "a.yaml" in problems[0] and "b.jsonl" in problems[1]


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="does not exist"):
        GoldenSetRegistry().add_directory(tmp_path / "nope")


def test_unknown_name_lists_the_available_ones() -> None:
    registry = GoldenSetRegistry()
    registry.add_file(FIXTURES / "mini.yaml")
    registry.add_file(FIXTURES / "mini-faq.csv")
    with pytest.raises(UnknownNameError) as info:
        registry.get("mini.fqa")
    assert str(info.value) == (
        "unknown golden set 'mini.fqa' (did you mean 'mini.faq' or 'mini_faq'?); "
        "available: mini.faq, mini_faq"
    )


def test_unknown_name_in_an_empty_registry_says_how_to_add_one() -> None:
    with pytest.raises(UnknownNameError, match=r"available: none .*sets:"):
        GoldenSetRegistry().get("x")


def test_duplicate_identifier_names_both_sources(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "mini.yaml", tmp_path / "copy.yaml")
    registry = GoldenSetRegistry()
    registry.add_file(FIXTURES / "mini.yaml")
    with pytest.raises(InvalidInputError) as info:
        registry.add_file(tmp_path / "copy.yaml")
    message = str(info.value)
    assert "duplicate golden set identifier 'mini.faq'" in message
    assert str(FIXTURES / "mini.yaml") in message and str(tmp_path / "copy.yaml") in message


def test_entry_points_provide_sets(installed_testpkg: None) -> None:
    registry = GoldenSetRegistry()
    registry.add_entry_points()
    assert registry.names() == ["pkg.sample"]
    assert registry.get("pkg.sample").questions[0].id == "p1"
    assert "entry point 'testpkg_sets'" in registry.source("pkg.sample")


def test_entry_point_duplicate_of_a_config_set_names_both(
    installed_testpkg: None, tmp_path: Path
) -> None:
    (tmp_path / "sets").mkdir()
    (tmp_path / "sets" / "sample.yaml").write_text(
        "identifier: pkg.sample\nquestions:\n  - {id: a, question: b, form: gap}\n"
    )
    (tmp_path / "cfg.yaml").write_text("sets:\n  - {directory: sets}\n")
    config = load_config(tmp_path / "cfg.yaml")
    with pytest.raises(InvalidInputError) as info:
        _ = config.golden_sets
    message = str(info.value)
    assert str(tmp_path / "sets" / "sample.yaml") in message
    assert "entry point 'testpkg_sets' (retrieval_eval_testpkg:golden_sets)" in message


def test_config_names_files_directories_and_identifiers(tmp_path: Path) -> None:
    (tmp_path / "more").mkdir()
    shutil.copy(FIXTURES / "mini.yaml", tmp_path / "more" / "mini.yaml")
    shutil.copy(FIXTURES / "mini.jsonl", tmp_path / "faq.jsonl")
    shutil.copy(FIXTURES / "mini-faq.csv", tmp_path / "mini-faq.csv")
    (tmp_path / "cfg.yaml").write_text(
        "sets:\n"
        "  - mini-faq.csv\n"
        "  - {directory: more}\n"
        "  - {path: faq.jsonl, identifier: team.faq}\n"
    )
    registry = load_config(tmp_path / "cfg.yaml").golden_sets
    assert registry.names() == ["mini.faq", "mini_faq", "team.faq"]


def test_config_reports_problems_of_every_set_source(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("identifier: a\nquestions: []\n")
    (tmp_path / "cfg.yaml").write_text("sets:\n  - a.yaml\n  - missing.yaml\n")
    with pytest.raises(GoldenSetError) as info:
        _ = load_config(tmp_path / "cfg.yaml").golden_sets
    problems = info.value.problems
    assert len(problems) == 2
    assert "has no questions" in problems[0]
    assert problems[1] == f"{tmp_path / 'missing.yaml'}: no such file"

"""The YAML config: lookup order, validation messages, config-relative paths, run settings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_eval.config import CONFIG_ENV, Config, find_config, load_config
from retrieval_eval.errors import ConfigError
from retrieval_eval.runner import resolve_retriever, resolve_set, resolve_settings

ROOT = Path(__file__).resolve().parent.parent
MINI = ROOT / "tests" / "golden" / "fixtures" / "mini.yaml"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A config in a sub-folder, naming a set and a corpus by relative paths."""
    folder = tmp_path / "project"
    (folder / "golden").mkdir(parents=True)
    (folder / "docs").mkdir()
    shutil.copy(MINI, folder / "golden" / "mini.yaml")
    (folder / "docs" / "refunds.md").write_text("Refunds are possible within thirty days.")
    (folder / "docs" / "password.md").write_text("Reset your password from the sign-in page.")
    (folder / "retrieval_eval.yaml").write_text(
        "sets:\n  - golden/mini.yaml\n"
        "retrievers:\n  docs_bm25: {type: lexical, corpus: docs}\n"
        "run: {timeout_s: 5, max_error_rate: 0.1}\n"
        "evaluations:\n"
        "  - {set: mini.faq, retriever: docs_bm25, run: {timeout_s: 9, cutoffs: [1, 3, 5]}}\n"
    )
    return folder


@pytest.fixture
def elsewhere(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    other = tmp_path / "elsewhere"
    other.mkdir()
    monkeypatch.chdir(other)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    return other


def test_relative_paths_resolve_against_the_config_folder(project: Path, elsewhere: Path) -> None:
    config = load_config(project / "retrieval_eval.yaml")
    assert config.base_dir == project.resolve()
    assert resolve_set(config, "mini.faq").identifier == "mini.faq"
    retriever = resolve_retriever(config, "docs_bm25")
    assert retriever.retrieve("refunds", 12) == ["refunds.md"]


def test_a_relative_config_path_is_taken_from_the_cwd(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project.parent)
    config = load_config("project/retrieval_eval.yaml")
    assert config.path == (project / "retrieval_eval.yaml").resolve()
    assert config.golden_sets.names() == ["mini.faq"]


def test_lookup_order(project: Path, elsewhere: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert find_config() is None
    assert load_config() == Config()
    (elsewhere / "retrieval_eval.yaml").write_text("store: sqlite:///cwd.sqlite\n")
    assert load_config().store == "sqlite:///cwd.sqlite"
    monkeypatch.setenv(CONFIG_ENV, str(project / "retrieval_eval.yaml"))
    assert load_config().path == (project / "retrieval_eval.yaml").resolve()
    explicit = elsewhere / "explicit.yaml"
    explicit.write_text("store: sqlite:///explicit.sqlite\n")
    assert load_config(explicit).store == "sqlite:///explicit.sqlite"


def test_empty_config_file_is_an_empty_config(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("")
    config = load_config(tmp_path / "c.yaml")
    assert config.sets == [] and config.retrievers == {}


def test_missing_config_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"config file .*absent\.yaml does not exist"):
        load_config(tmp_path / "absent.yaml")


def test_invalid_yaml_names_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("sets:\n  - a.yaml\n retrievers: {\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: line 3: invalid YAML")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    (tmp_path / "c.yaml").write_text("- a\n")
    with pytest.raises(ConfigError, match="expected a mapping at the top level"):
        load_config(tmp_path / "c.yaml")


def test_every_bad_field_is_named_with_the_file(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "unknown_key: 1\n"
        "thresholds: {max_top1_drop: -0.1}\n"
        "run: {timeout_s: 0, cutoffs: [0, 3]}\n"
        "sets: [{path: a.yaml, directory: b}]\n"
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    lines = str(info.value).splitlines()
    assert all(line.startswith(f"{path}: ") for line in lines)
    fields = [line.removeprefix(f"{path}: ").split(":")[0] for line in lines]
    assert sorted(fields) == [
        "run.cutoffs",
        "run.timeout_s",
        "sets.0",
        "thresholds.max_top1_drop",
        "unknown_key",
    ]
    assert "give exactly one of 'path' or 'directory'" in str(info.value)
    assert "greater than or equal to 0" in str(info.value)


def test_run_settings_precedence(project: Path) -> None:
    config = load_config(project / "retrieval_eval.yaml")
    general = resolve_settings(config, "other.set", "docs_bm25")
    assert (general.timeout_s, general.max_error_rate, general.cutoffs) == (5, 0.1, [1, 3])
    specific = resolve_settings(config, "mini.faq", "docs_bm25")
    assert (specific.timeout_s, specific.cutoffs, specific.fetch_limit) == (9, [1, 3, 5], 20)
    overridden = resolve_settings(config, "mini.faq", "docs_bm25", timeout_s=1.5, cutoffs=None)
    assert (overridden.timeout_s, overridden.cutoffs) == (1.5, [1, 3, 5])


def test_defaults() -> None:
    settings = Config().run.settings()
    assert (settings.timeout_s, settings.max_error_rate, settings.fetch_limit) == (30.0, 0.0, 12)
    assert settings.max_concurrency is None


def test_a_set_path_on_the_command_line_is_relative_to_the_cwd(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(project / "golden")
    assert resolve_set(Config(), "mini.yaml").identifier == "mini.faq"

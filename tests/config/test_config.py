"""The YAML config: lookup order, validation messages, config-relative paths, run settings."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from retrieval_eval.config.lookup import CONFIG_ENV, find_config
from retrieval_eval.config.models import Config, load_config
from retrieval_eval.errors import ConfigError
from retrieval_eval.workflows.labelled_run import resolve_retriever, resolve_set, resolve_settings

ROOT = Path(__file__).resolve().parents[2]
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


# --- hostile configs: bounded, each refusal naming the file and the limit -----------------------


def config_problem(path: Path, text: str | bytes) -> str:
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


def test_anchors_and_merge_keys_work_in_a_config(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "retrievers:\n"
        "  a: &base {type: lexical, corpus: docs, k1: 1.5}\n"
        "  b: {<<: *base, k1: 1.2}\n"
        "run: {cutoffs: &k [1, 3]}\n"
        "evaluations: [{set: s, retriever: a, run: {cutoffs: *k}}]\n"
    )
    config = load_config(path)
    assert config.retrievers["b"] == {"type": "lexical", "corpus": "docs", "k1": 1.2}
    assert config.evaluations[0].run is not None and config.evaluations[0].run.cutoffs == [1, 3]


def test_an_alias_bomb_in_a_config_is_refused_at_the_expansion_limit(tmp_path: Path) -> None:
    levels = ["l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 9)]
    text = "x:\n" + "".join(f"  {line}\n" for line in levels) + "retrievers: {r: {o: *l8}}\n"
    path = tmp_path / "c.yaml"
    problem = config_problem(path, text)
    assert problem == (
        f"{path}: YAML aliases expand the config past 100,000 values (the limit); "
        "write the values out or use fewer aliases"
    )


def test_a_config_that_contains_itself_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    problem = config_problem(path, "run: &r {cutoffs: *r}\n")
    assert problem == f"{path}: line 1: a YAML alias refers to a value that contains it"


@pytest.mark.parametrize("depth", [50, 2_000])
def test_a_config_nested_past_the_limit_is_refused(tmp_path: Path, depth: int) -> None:
    path = tmp_path / "c.yaml"
    # the document, the retrievers mapping and r's are 3 levels: 50 lists more make 53
    problem = config_problem(path, f"retrievers: {{r: {{o: {'[' * depth}{']' * depth}}}}}\n")
    assert problem.startswith(f"{path}: ")
    assert problem.endswith("nested more than 50 levels deep (the limit is 50)")


def test_an_integer_past_the_digit_limit_in_a_config(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    problem = config_problem(path, f"store: {'9' * 4_301}\n")
    assert problem == (
        f"{path}: line 1: an integer of 4,301 digits is over the limit of 4,300 digits"
    )


def test_a_config_over_1_mib_is_refused_unread(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    with path.open("wb") as handle:
        handle.truncate(2**20 + 1)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: 1,048,577 bytes, over the limit for a config file (1 MiB)"


def test_a_binary_config_is_not_utf_8(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    assert config_problem(path, b"\xff\xfe\x00") == (
        f"{path}: cannot read the config file: not UTF-8 text"
    )


def test_config_messages_quote_little_of_the_input(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    huge = "k" * 300_000
    # explicit keys ('? key'): an implicit YAML key may not pass 1,024 characters
    text = f"? {huge}\n: 1\nretrievers:\n  ? {huge}\n  : 2\nrun:\n  ? {huge}\n  : 3\n"
    problem = config_problem(path, text)
    lines = problem.splitlines()
    assert len(lines) == 3
    for line in lines:
        assert len(line) < len(str(path)) + 600, line[:1000]


def test_lint_section_accepts_the_mode_shorthand_and_names_a_bad_mode(tmp_path: Path) -> None:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text("lint: fail\n")
    assert load_config(path).lint.mode == "fail"
    path.write_text("lint: {mode: off, match_min_overlap: 0.3}\n")  # YAML reads off as false
    lint = load_config(path).lint
    assert (lint.mode, lint.match_min_overlap, lint.gap_max_overlap) == ("off", 0.3, 0.6)
    assert Config().lint.mode == "warn"
    path.write_text("lint: loud\n")
    with pytest.raises(ConfigError, match=r"lint\.mode"):
        load_config(path)
    path.write_text("lint: off\n")
    assert load_config(path).lint.mode == "off"

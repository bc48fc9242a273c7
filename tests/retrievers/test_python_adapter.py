"""``type: python``: a factory with options, folders on ``sys.path``, a once-per-run prepare."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_eval.errors import ConfigError, UnknownNameError
from retrieval_eval.retrievers.registry import RetrieverRegistry

TEAM_MODULE = """
PREPARED = []

class TeamRetriever:
    identifier = "its_own_name"
    def __init__(self, docs, top_n=2):
        self.docs, self.top_n = docs, top_n
    def retrieve(self, question, limit):
        return self.docs[: min(limit, self.top_n)]

def make_retriever(docs, top_n=2):
    return TeamRetriever(docs, top_n)

def make_function(docs):
    return lambda question, limit: docs[:limit]

def build_index(docs, top_n=2):
    PREPARED.append(len(docs))
"""


@pytest.fixture
def team(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A config folder and, beside it, a retrievers folder holding the team's module."""
    (tmp_path / "retrievers").mkdir()
    (tmp_path / "retrievers" / "team_pyadapter_mod.py").write_text(TEAM_MODULE, encoding="utf-8")
    (tmp_path / "config").mkdir()
    monkeypatch.chdir(tmp_path / "config")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path / "config"
    sys.modules.pop("team_pyadapter_mod", None)


def registry(config_dir: Path, **spec: object) -> RetrieverRegistry:
    full = {"type": "python", "paths": ["../retrievers"], **spec}
    return RetrieverRegistry({"team": full}, base_dir=config_dir, source="team.yaml")


@pytest.mark.parametrize("factory", ["make_retriever", "TeamRetriever", "make_function"])
def test_the_factory_gets_the_options_and_the_config_key_names_the_retriever(
    team: Path, factory: str
) -> None:
    built = registry(
        team, factory=f"team_pyadapter_mod:{factory}", options={"docs": ["a", "b", "c"]}
    ).build("team")
    assert built.identifier == "team"
    assert list(built.retrieve("q", 5))[:2] == ["a", "b"]


def test_prepare_is_called_with_the_options(team: Path) -> None:
    reg = registry(
        team,
        factory="team_pyadapter_mod:make_retriever",
        prepare="team_pyadapter_mod:build_index",
        options={"docs": ["a", "b", "c"]},
    )
    assert reg.prepare("team") is True
    assert sys.modules["team_pyadapter_mod"].PREPARED == [3]


def test_options_outside_the_signature_name_the_argument_and_the_signature(team: Path) -> None:
    reg = registry(team, factory="team_pyadapter_mod:make_retriever", options={"doc": []})
    with pytest.raises(ConfigError) as info:
        reg.build("team")
    message = str(info.value)
    assert "team.yaml: retrievers.team.options:" in message
    assert "'docs'" in message
    assert "make_retriever(docs, top_n=2)" in message


def test_a_missing_folder_and_a_bad_factory_fail_the_check_without_importing(
    team: Path,
) -> None:
    reg = registry(team, factory="no colon", paths=["../nowhere"])
    with pytest.raises(ConfigError) as info:
        reg.check("team")
    assert "retrievers.team.factory" in str(info.value)
    assert "retrievers.team.paths" in str(info.value)
    assert "no such folder" in str(info.value)


def test_a_module_not_found_names_the_folders_searched_and_the_three_fixes(team: Path) -> None:
    reg = registry(team, factory="team_pyadapter_missing:make")
    with pytest.raises(UnknownNameError) as info:
        reg.build("team")
    message = str(info.value)
    assert "cannot import module 'team_pyadapter_missing'" in message
    assert f"{team} (the working directory)" in message
    assert f"{(team.parent / 'retrievers')} (paths:)" in message
    for fix in ("install it as a package", "`paths:`", "'retrieval_eval.retrievers' entry-point"):
        assert fix in message


def test_a_plain_import_path_names_the_fixes_too(team: Path) -> None:
    with pytest.raises(UnknownNameError, match=r"fixes: .*paths:"):
        RetrieverRegistry(base_dir=team).build("team_pyadapter_missing:make")


def test_inside_airflow_the_dags_folder_is_named_among_the_folders_searched(
    team: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "airflow", type(sys)("airflow"))
    monkeypatch.delitem(sys.modules, "airflow.configuration", raising=False)
    monkeypatch.setenv("AIRFLOW__CORE__DAGS_FOLDER", "/opt/airflow/dags")
    reg = registry(team, factory="team_pyadapter_missing:make")
    with pytest.raises(UnknownNameError, match="/opt/airflow/dags \\(the Airflow DAGs folder\\)"):
        reg.build("team")

"""``run --relevance-level`` and ``run: {relevance_level: ...}``: which grades count as targets."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

GRADED = """identifier: cli.graded
questions:
  - {id: q1, question: first, form: match, grades: {a: 1, b: 3}}
  - {id: q2, question: second, form: gap, grades: {a: 2}}
  - {id: q3, question: third, form: gap, expected_document_ids: [a]}
"""
RETRIEVERS = """
def a_then_b(question, limit):
    return ["a", "b"]
"""
RETRIEVER = "cli_graded_retrievers:a_then_b"


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "work"
    work.mkdir()
    (work / "graded.yaml").write_text(GRADED)
    (work / "cli_graded_retrievers.py").write_text(RETRIEVERS)
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "cli_graded_retrievers", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", f"sqlite:///{tmp_path / 'results.sqlite'}")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    return work


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="retrieval-eval")


def _run(*extra: str) -> dict:
    result = invoke("run", "graded.yaml", RETRIEVER, "--format", "json", *extra)
    assert result.exit_code == 0, result.output
    return dict(json.loads(result.stdout))


def test_the_level_picks_the_targets_and_keeps_its_own_baseline(workdir: Path) -> None:
    one = _run()
    assert one["settings"]["relevance_level"] == 1
    assert (one["top1_hits"], one["top3_hits"]) == (3, 3)  # 'a' is a target everywhere
    two = _run("--relevance-level", "2")
    assert two["settings"]["relevance_level"] == 2
    # q1: only b (grade 3) counts, found second; q2: a (grade 2) first; q3: no target at 2
    assert (two["top1_hits"], two["top3_hits"]) == (1, 2)
    assert [q["first_hit_rank"] for q in two["questions"]] == [2, 1, None]
    assert two["labels_fingerprint"] != one["labels_fingerprint"]
    # a run at level 2 is never judged against the level-1 baseline: it judges other labels
    assert two["regression"]["state"] == "not_comparable"
    again = _run("--relevance-level", "2")["regression"]
    assert again["state"] == "no_regression"


def test_the_config_sets_the_level_and_the_flag_wins(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text("sets: [graded.yaml]\nrun: {relevance_level: 3}\n")
    assert _run("--no-save")["settings"]["relevance_level"] == 3
    assert _run("--no-save", "--relevance-level", "1")["settings"]["relevance_level"] == 1


@pytest.mark.parametrize("value", ["0", "4", "two"])
def test_a_bad_level_exits_2_naming_the_option(workdir: Path, value: str) -> None:
    result = invoke("run", "graded.yaml", RETRIEVER, "--relevance-level", value)
    assert result.exit_code == 2
    assert "--relevance-level" in result.output


def test_a_bad_level_in_the_config_exits_2_naming_the_field(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text("run: {relevance_level: 5}\n")
    result = invoke("run", "graded.yaml", RETRIEVER, "--no-save")
    assert result.exit_code == 2
    assert "relevance_level" in result.output

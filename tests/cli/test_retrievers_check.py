"""``retrievers check NAME``: the retriever built as the DAG would, one question answered."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from retrieval_eval.cli import cli

SET = """identifier: check.set
questions:
  - {id: q1, question: how do refunds work, form: match, expected_document_ids: [a]}
"""
MODULE = "def make(prefix):\n    return lambda question, limit: [prefix + question]\n"


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    (tmp_path / "code").mkdir()
    (tmp_path / "code" / "check_cmd_mod.py").write_text(MODULE, encoding="utf-8")
    (tmp_path / "set.yaml").write_text(SET, encoding="utf-8")
    spec = {"type": "python", "factory": "check_cmd_mod:make", "paths": ["code"]}
    data = {
        "sets": ["set.yaml"],
        "retrievers": {
            "mine": {**spec, "options": {"prefix": "id:"}},
            "wrong": {**spec, "options": {"prefixes": "id:"}},
        },
        "evaluations": [{"set": "check.set", "retriever": "mine"}],
    }
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield path
    sys.modules.pop("check_cmd_mod", None)


def test_check_answers_the_first_question_of_its_evaluations_set(config: Path) -> None:
    done = CliRunner().invoke(cli, ["retrievers", "check", "mine", "--config", str(config)])
    assert done.exit_code == 0, done.output
    assert "Retriever: mine (adapter type 'python')" in done.output
    assert "id:how do refunds work" in done.output
    assert "Latency:" in done.output


def test_check_asks_the_given_question(config: Path) -> None:
    args = ["retrievers", "check", "mine", "--question", "hello", "--config", str(config)]
    done = CliRunner().invoke(cli, args)
    assert "id:hello" in done.output


def test_a_retriever_that_cannot_be_built_exits_2_with_the_reason(config: Path) -> None:
    done = CliRunner().invoke(cli, ["retrievers", "check", "wrong", "--config", str(config)])
    assert done.exit_code == 2
    assert "retrievers.wrong.options" in done.output and "'prefixes'" in done.output

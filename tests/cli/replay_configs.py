"""A config file for the replay commands' tests: the demo corpus, the demo query log, a store
and a home folder of the test's own (imported as ``cli.replay_configs``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
CORPUS = str(EXAMPLES / "corpus")
LOG = str(EXAMPLES / "logs" / "queries.jsonl")


def write_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any]) -> Path:
    """``data`` as ``retrieval_eval.yaml`` in ``tmp_path``; spool and default store under
    ``tmp_path/home``, and no store named by the environment."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def invoke(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)])

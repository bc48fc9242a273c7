"""A run that is evaluated is kept, whatever the retriever does around it (QA findings on the
lone-surrogate work): a ``close()`` that raises is a warning, not a lost run; a dead-label
source or lookup error holding a lone surrogate is stored escaped, so the run's later commands
(``show`` in every format, the dashboard's JSON) keep working; an identifier holding one is
refused before the run (exit 2), since a run under it could not be saved.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli
from retrieval_eval.errors import RetrieverError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import load_golden_set
from retrieval_eval.retrievers.base import FunctionRetriever

ROOT = Path(__file__).resolve().parents[2]
DEMO_SET = ROOT / "examples" / "golden" / "handbook.yaml"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


def test_a_close_that_raises_is_a_warning_and_the_run_is_saved(
    db: str, caplog: pytest.LogCaptureFixture
) -> None:
    done = invoke("run", str(DEMO_SET), "cli.store_retrievers:ClosesBadly", "--db", db)
    assert done.exit_code == 0, done.output
    assert (
        "close() failed after the evaluation, whose results stand: RuntimeError: pool already gone"
        in caplog.text
    )
    listed = invoke("runs", "list", "handbook.demo", "closes_badly", "--db", db, "--format", "json")
    assert listed.exit_code == 0 and len(json.loads(listed.output)) == 1


@pytest.mark.parametrize("mode", ["source", "lookup_fails"])
def test_a_lone_surrogate_in_the_label_check_is_stored_escaped(
    db: str, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("STORE_CLI_MODE", mode)
    done = invoke("run", str(DEMO_SET), "cli.store_retrievers:OddLabels", "--db", db)
    assert done.exit_code == 0, done.output
    expected = (
        "index \\ud800"
        if mode == "source"
        else "check failed: RuntimeError: lookup failed \\udc80 here"
    )
    for fmt in ("text", "json", "markdown"):
        shown = invoke("runs", "show", "1", "--db", db, "--format", fmt)
        assert shown.exit_code == 0, shown.output
        shown.output.encode("utf-8")  # every line is text a terminal can print
        if fmt == "json":
            assert json.loads(shown.output)["dead_labels"]["source"] == expected


def test_an_identifier_holding_a_lone_surrogate_is_refused_before_the_run(db: str) -> None:
    golden = load_golden_set(DEMO_SET)
    called = []
    retriever = FunctionRetriever(lambda q, k: called.append(q) or [], identifier="r\ud800")
    with pytest.raises(
        RetrieverError, match=r"retriever identifier 'r\\ud800' holds '\\ud800', which is not"
    ):
        evaluate(golden, retriever)
    assert called == []  # nothing evaluated, so nothing is lost
    done = invoke("run", str(DEMO_SET), "cli.store_retrievers:Odd\udcffName", "--db", db)
    assert done.exit_code == 2, done.output

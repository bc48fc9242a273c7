"""Every failure exits with its documented code, with ``--debug`` too (which adds the traceback):
2 bad input, 3 an invalid run or an unreachable store. A retriever's own ``SystemExit`` is its
question's error, not the end of the run; ``run --identifier`` names a JSONL/CSV set.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from cli import test_cli_core
from cli.test_cli_core import invoke, run_script

# the core tests' cwd: two.yaml (set cli.two: "first" answered by "a", "second" by "b") and
# cli_fake_retrievers (always_a, broken, flaky), runs saved under tmp_path only
workdir = test_cli_core.workdir
DOWN = "postgresql://eval:Sup3r-Secr3t@127.0.0.1:1/results"  # nothing listens on port 1
EXITING = """
import sys

def exits(question, limit):
    if question == "second":
        sys.exit(7)
    return ["a"]

def generator_exit(question, limit):
    raise GeneratorExit("closed")
"""


@pytest.fixture
def work(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (workdir / "bad.yaml").write_text("identifier: bad\nquestions: [{id: a, form: odd}]\n")
    (workdir / "exiting_retrievers.py").write_text(EXITING)
    monkeypatch.delitem(sys.modules, "exiting_retrievers", raising=False)
    return workdir


CASES = {
    "bad set": (["run", "bad.yaml", "cli_fake_retrievers:always_a"], 2, "GoldenSetError"),
    "unknown set": (["run", "absent.set", "cli_fake_retrievers:always_a"], 2, "UnknownNameError"),
    "invalid run": (["run", "two.yaml", "cli_fake_retrievers:broken"], 3, "InvalidRunError"),
    "unreachable store": (
        ["run", "two.yaml", "cli_fake_retrievers:always_a", "--db", DOWN],
        3,
        "StoreUnavailableError",
    ),
    "unreachable store (db)": (["db", "upgrade", "--db", DOWN], 3, "StoreUnavailableError"),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("debug", [False, True])
def test_each_failure_keeps_its_exit_code_with_and_without_debug(
    work: Path, case: str, debug: bool
) -> None:
    args, code, error = CASES[case]
    result = invoke(*(["--debug"] if debug else []), *args)
    assert result.exit_code == code, result.output
    assert ("Traceback (most recent call last)" in result.stderr) is debug
    assert (error in result.stderr) is debug
    assert "error: " in result.stderr
    assert "Sup3r-Secr3t" not in result.output


def test_debug_keeps_the_exit_code_of_the_real_process(work: Path) -> None:
    done = run_script("--debug", "run", "bad.yaml", "cli_fake_retrievers:always_a", cwd=work)
    assert done.returncode == 2, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "GoldenSetError" in done.stderr and "unknown form 'odd'" in done.stderr


@pytest.mark.parametrize("timeout", ["30", None])
def test_a_retriever_exiting_is_its_questions_error_and_the_run_goes_on(
    work: Path, timeout: str | None
) -> None:
    args = ["--timeout", timeout] if timeout else []
    result = invoke(
        "run", "two.yaml", "exiting_retrievers:exits", "--format", "json", "--no-save", *args
    )
    assert result.exit_code == 3, result.output  # one error of two: the run is invalid
    data = json.loads(result.stdout)
    errors = {q["id"]: q["error"] for q in data["questions"]}
    assert errors == {"q-hit": None, "q-miss": "SystemExit: 7"}
    assert "run invalid: 1 of 2 questions errored" in result.stderr


def test_a_retriever_raising_generator_exit_is_recorded(work: Path) -> None:
    result = invoke(
        "run", "two.yaml", "exiting_retrievers:generator_exit", "--max-error-rate", "1", "--no-save"
    )
    assert result.exit_code == 0, result.output
    assert "GeneratorExit: closed" in result.stdout


# --- run --identifier ---------------------------------------------------------------------------


def test_run_takes_a_csv_sets_identifier_from_the_option(work: Path) -> None:
    (work / "faq.csv").write_text("id,question,form,expected_document_ids\nq1,first,match,a\n")
    result = invoke(
        "run", "faq.csv", "cli_fake_retrievers:always_a", "--identifier", "team.faq", "--format",
        "json", "--no-save",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["set"] == "team.faq"
    default = invoke(
        "run", "faq.csv", "cli_fake_retrievers:always_a", "--format", "json", "--no-save"
    )
    assert json.loads(default.stdout)["set"] == "faq"


def test_run_identifier_needs_a_set_file(work: Path) -> None:
    (work / "retrieval_eval.yaml").write_text("sets: [two.yaml]\n")
    result = invoke("run", "cli.two", "cli_fake_retrievers:always_a", "--identifier", "x.y")
    assert result.exit_code == 2
    assert "--identifier" in result.stderr and "set file" in result.stderr


def test_run_identifier_is_validated_like_the_sets(work: Path) -> None:
    (work / "faq.jsonl").write_text('{"id": "q1", "question": "first", "form": "match"}\n')
    result = invoke("run", "faq.jsonl", "cli_fake_retrievers:always_a", "--identifier", "Bad Name")
    assert result.exit_code == 2
    assert "'Bad Name' is not a valid identifier" in result.stderr


def test_sets_validate_takes_the_identifier_too(work: Path) -> None:
    (work / "faq.jsonl").write_text('{"id": "q1", "question": "first", "form": "match"}\n')
    result = invoke("sets", "validate", "--identifier", "team.faq", "faq.jsonl")
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "ok: faq.jsonl: set 'team.faq', 1 questions"

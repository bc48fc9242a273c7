"""The core commands: run (formats, output, exit codes), sets, retrievers; no Airflow, fast help.

Most tests call the click app in-process (fast); a few run the real console script in a
subprocess where the process boundary is the point (tracebacks, imports, another cwd).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "examples" / "retrieval_eval.yaml"
MINI = ROOT / "tests" / "golden" / "fixtures" / "mini.yaml"
EXE = Path(sys.executable).parent / "retrieval-eval"

TWO_QUESTIONS = """identifier: cli.two
questions:
  - {id: q-hit, question: first, form: match, expected_document_ids: [a], hard_class: easy}
  - {id: q-miss, question: second, form: gap, expected_document_ids: [b]}
"""

RETRIEVERS = """
def always_a(question, limit):
    return ["a", "c"]

def broken(question, limit):
    raise RuntimeError("backend down")

def flaky(question, limit):
    if question == "second":
        raise RuntimeError("backend down")
    return ["a"]
"""

JSON_KEYS = {
    "set", "retriever", "question_count", "top1_hits", "top3_hits", "top1_hit_rate",
    "top3_hit_rate", "error_count", "valid", "by_form", "by_hard_class", "latency_ms",
    "questions",
}  # fmt: skip
QUESTION_KEYS = {
    "id", "form", "hard_class", "top1_hit", "top3_hit", "first_hit_rank", "retrieved",
    "latency_ms", "error",
}  # fmt: skip


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A cwd with a two-question set, a retriever module and no config; runs are not saved
    anywhere outside tmp_path."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "two.yaml").write_text(TWO_QUESTIONS)
    (work / "cli_fake_retrievers.py").write_text(RETRIEVERS)
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "cli_fake_retrievers", raising=False)
    isolate_env(monkeypatch, tmp_path)
    return work


def isolate_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", f"sqlite:///{tmp_path / 'results.sqlite'}")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), prog_name="retrieval-eval")


def run_script(*args: str, cwd: Path, env: dict[str, str] | None = None):
    return subprocess.run(
        [str(EXE), *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **(env or {})},
    )


# --- run: formats and output ----------------------------------------------------------------


def test_run_text_report(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:always_a")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert "Top-1 hit rate: 50.0% [9.5%, 90.5%] (1/2)" in lines  # 95% Wilson interval
    assert "Top-3 hit rate: 50.0% [9.5%, 90.5%] (1/2)" in lines
    assert "Per question" in lines and "By form" in lines and "By hard class" in lines
    # the headline before the question table, which a long set makes long
    assert lines.index("Top-1 hit rate: 50.0% [9.5%, 90.5%] (1/2)") < lines.index("Per question")
    row = next(line for line in lines if "q-miss" in line)
    assert "gap" in row and "miss" in row
    assert lines[0] == "Set cli.two  Retriever cli_fake_retrievers:always_a  Questions 2"


def test_a_first_run_not_saved_does_not_claim_to_become_the_baseline(workdir: Path) -> None:
    """With no store file and with an empty store, saved or not: only a saved run says it."""
    run = ("run", "two.yaml", "cli_fake_retrievers:always_a", "--summary")
    for _ in range(2):  # no store file yet; then the store `db upgrade` made, still empty
        unsaved = invoke(*run, "--no-save")
        assert unsaved.exit_code == 0, unsaved.output
        assert "it would be the baseline, but it is not saved." in unsaved.stdout
        assert "becomes the baseline" not in unsaved.stdout
        assert invoke("db", "upgrade").exit_code == 0
    saved = invoke(*run)
    assert saved.exit_code == 0, saved.output
    assert "these labels: it becomes the baseline." in saved.stdout


def test_run_json_contract(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:always_a", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) >= JSON_KEYS
    assert data["set"] == "cli.two" and data["retriever"] == "cli_fake_retrievers:always_a"
    assert (data["question_count"], data["top1_hits"], data["top3_hits"]) == (2, 1, 1)
    assert (data["top1_hit_rate"], data["top3_hit_rate"]) == (0.5, 0.5)
    assert (data["error_count"], data["valid"]) == (0, True)
    one, none = [pytest.approx(0.2065493144), 1.0], [0.0, pytest.approx(0.7934506856)]
    assert data["by_form"] == {
        "match": {"questions": 1, "top1_hit_rate": 1.0, "top3_hit_rate": 1.0,
                  "top1_hit_rate_ci": one, "top3_hit_rate_ci": one},
        "gap": {"questions": 1, "top1_hit_rate": 0.0, "top3_hit_rate": 0.0,
                "top1_hit_rate_ci": none, "top3_hit_rate_ci": none},
    }  # fmt: skip
    assert data["by_hard_class"] == {
        "easy": {"questions": 1, "top1_hit_rate": 1.0, "top3_hit_rate": 1.0,
                 "top1_hit_rate_ci": one, "top3_hit_rate_ci": one}
    }  # fmt: skip
    half = [pytest.approx(0.0945312057), pytest.approx(0.9054687943)]
    assert data["top1_hit_rate_ci"] == half and data["top3_hit_rate_ci"] == half
    assert data["metrics_ci"] == {"hit_rate@1": half, "hit_rate@3": half}
    assert set(data["latency_ms"]) == {"p50", "p95"}
    assert [set(q) for q in data["questions"]] == [QUESTION_KEYS, QUESTION_KEYS]
    hit, miss = data["questions"]
    assert hit == {**hit, "id": "q-hit", "form": "match", "hard_class": "easy", "top1_hit": True,
                   "first_hit_rank": 1, "retrieved": ["a", "c"], "error": None}  # fmt: skip
    assert miss["first_hit_rank"] is None and miss["top3_hit"] is False


def test_run_markdown(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:always_a", "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("**🆕 baseline** · cli.two × cli_fake_retrievers:always_a")
    assert "| top-1 | 50.0% (1/2) | [9.5%, 90.5%] | – | – |" in result.stdout
    assert "| q-miss | gap |  | miss | miss |" in result.stdout


def test_run_output_file(workdir: Path) -> None:
    result = invoke(
        "run", "two.yaml", "cli_fake_retrievers:always_a", "--format", "json", "--output", "r.json"
    )
    assert result.exit_code == 0, result.output
    assert json.loads((workdir / "r.json").read_text())["top1_hits"] == 1
    assert "Top-1" not in result.stdout and "{" not in result.stdout
    assert "r.json" in result.stderr


# --- run: exit codes --------------------------------------------------------------------------


def test_too_many_errors_exits_3_and_still_prints_the_report(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:flaky")
    assert result.exit_code == 3
    assert "Top-1 hit rate: 50.0% [9.5%, 90.5%] (1/2)" in result.stdout.splitlines()
    assert "RuntimeError: backend down" in result.stdout
    assert "run INVALID" in result.stdout
    assert "error: run invalid: 1 of 2 questions errored" in result.stderr


def test_too_many_errors_json_still_printed(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:broken", "--format", "json")
    assert result.exit_code == 3
    data = json.loads(result.stdout)
    assert (data["error_count"], data["valid"], data["top1_hits"]) == (2, False, 0)


def test_max_error_rate_option_allows_errors(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:flaky", "--max-error-rate", "0.5")
    assert result.exit_code == 0, result.output
    assert "run valid" in result.stdout


def test_bad_set_file_exits_2_listing_every_problem(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(
        "identifier: bad\nquestions:\n  - {id: a, question: '', form: match}\n"
        "  - {id: a, question: b, form: odd}\n"
    )
    result = invoke("run", "bad.yaml", "cli_fake_retrievers:always_a")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: 2 problems in golden question set:")
    assert "question 'a' (#1, line 3): field 'question'" in result.stderr
    assert "question 'a' (#2, line 4): field 'form': unknown form 'odd'" in result.stderr


def test_unknown_set_exits_2_listing_available(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text(f"sets: [{MINI}]\n")
    result = invoke("run", "mini.fqa", "cli_fake_retrievers:always_a")
    assert result.exit_code == 2
    assert result.stderr.strip() == (
        "error: unknown golden set 'mini.fqa' (did you mean 'mini.faq'?); available: mini.faq"
    )


def test_unknown_retriever_exits_2_listing_configured_and_types(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text(
        "retrievers:\n  docs_bm25: {type: lexical, corpus: docs}\n"
    )
    result = invoke("run", "two.yaml", "docs_bm52")
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "error: unknown retriever 'docs_bm52' (did you mean 'docs_bm25'?); configured: docs_bm25"
    )
    assert "lexical" in result.stderr


@pytest.mark.parametrize(
    "option,value",
    [
        ("--timeout", "-1"),
        ("--timeout", "0"),
        ("--max-error-rate", "-0.1"),
        ("--max-concurrency", "0"),
    ],
)
def test_bad_option_values_exit_2(workdir: Path, option: str, value: str) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:always_a", option, value)
    assert result.exit_code == 2
    assert option in result.stderr
    assert "Top-1" not in result.stdout


def test_missing_config_file_exits_2(workdir: Path) -> None:
    result = invoke("run", "two.yaml", "cli_fake_retrievers:always_a", "--config", "nope.yaml")
    assert result.exit_code == 2
    assert "config file nope.yaml does not exist" in result.stderr


def test_errors_are_one_message_without_traceback(workdir: Path) -> None:
    result = invoke("run", "missing.yaml", "cli_fake_retrievers:always_a")
    assert result.exit_code == 2
    assert (
        result.stderr
        == "error: 1 problem in golden question set:\n  - missing.yaml: no such file\n"
    )


def test_debug_shows_the_traceback(workdir: Path) -> None:
    done = run_script("--debug", "run", "missing.yaml", "x:y", cwd=workdir)
    assert done.returncode != 0
    assert "Traceback (most recent call last)" in done.stderr
    assert "GoldenSetError" in done.stderr and "missing.yaml: no such file" in done.stderr


# --- sets and retrievers ------------------------------------------------------------------------


def test_sets_list(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text("sets: [two.yaml, " + str(MINI) + "]\n")
    result = invoke("sets", "list")
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in result.stdout.splitlines()]
    assert [row[0] for row in rows] == ["cli.two", "mini.faq"]
    assert rows[0][1] == "2 questions" and rows[1][1] == "3 questions"
    assert rows[1][3] == str(MINI)


def test_sets_list_without_config(workdir: Path) -> None:
    result = invoke("sets", "list")
    assert result.exit_code == 0
    assert "no golden sets configured" in result.stdout


def test_sets_validate_ok(workdir: Path) -> None:
    result = invoke("sets", "validate", "two.yaml", str(MINI))
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines() == [
        "ok: two.yaml: set 'cli.two', 2 questions",
        f"ok: {MINI}: set 'mini.faq', 3 questions",
    ]


def test_sets_validate_reports_all_problems_of_all_files(workdir: Path) -> None:
    (workdir / "bad.yaml").write_text(
        "identifier: Bad\nquestions:\n  - {id: ' ', question: x, form: match}\n"
        "  - {id: b, question: x, form: match, hard_class: ''}\n"
    )
    (workdir / "bad.jsonl").write_text('{"id": "j", "question": "x", "form": "nope"}\n')
    result = invoke("sets", "validate", "bad.yaml", "two.yaml", "bad.jsonl")
    assert result.exit_code == 2
    assert "ok: two.yaml" in result.stdout
    problems = result.stderr.splitlines()
    assert problems[-1] == "4 problem(s) found"
    assert "question #1 (line 3): field 'id'" in problems[0]
    assert "question 'b' (#2, line 4): field 'hard_class'" in problems[1]
    assert "'Bad' is not a valid identifier" in problems[2]
    assert "bad.jsonl (set 'bad'): question 'j' (#1, line 1): field 'form'" in problems[3]


def test_sets_validate_csv_identifier_option(workdir: Path) -> None:
    (workdir / "faq.csv").write_text("id,question,form\nq1,Where?,gap\n")
    result = invoke("sets", "validate", "--identifier", "team.faq", "faq.csv")
    assert result.stdout.strip() == "ok: faq.csv: set 'team.faq', 1 questions"


def test_retrievers_list(workdir: Path) -> None:
    (workdir / "retrieval_eval.yaml").write_text(
        "retrievers:\n  docs_bm25: {type: lexical, corpus: docs}\n"
    )
    result = invoke("retrievers", "list")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "Retrievers:"
    assert lines[1].startswith("  docs_bm25\ttype 'lexical' from ")
    types_at = lines.index("Adapter types:")
    assert "  lexical\tretrieval_eval.retrievers.lexical:LexicalRetriever" in lines[types_at:]


# --- the process: help, imports, the demo ---------------------------------------------------


def test_help_lists_the_commands() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    for command in ("run", "sets", "retrievers"):
        assert f"  {command} " in result.stdout
    run_help = invoke("run", "--help")
    assert "--format [text|json|markdown|csv]" in run_help.stdout


def test_cli_never_imports_airflow(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "import retrieval_eval.cli\n"
        "after_import = sorted(m for m in sys.modules if m.split('.')[0] == 'airflow')\n"
        "try:\n"
        "    retrieval_eval.cli.main(['--help'])\n"
        "except SystemExit as exc:\n"
        "    code = exc.code\n"
        "after_help = sorted(m for m in sys.modules if m.split('.')[0] == 'airflow')\n"
        "heavy = sorted(m for m in ('pandas', 'bm25s', 'sqlalchemy') if m in sys.modules)\n"
        "print('RESULT', after_import, after_help, code, heavy)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    last = done.stdout.strip().splitlines()[-1]
    assert last == "RESULT [] [] 0 []", last


def test_demo_end_to_end_from_another_directory(tmp_path: Path) -> None:
    env = {
        "RETRIEVAL_EVAL_DB": f"sqlite:///{tmp_path / 'results.sqlite'}",
        "RETRIEVAL_EVAL_HOME": str(tmp_path / "home"),
    }
    env.pop("RETRIEVAL_EVAL_CONFIG", None)
    done = run_script(
        "run", "handbook.demo", "handbook_bm25", "--config", str(DEMO_CONFIG), "--format", "json",
        cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["set"] == "handbook.demo" and data["retriever"] == "handbook_bm25"
    assert data["question_count"] == len(data["questions"]) >= 40
    assert data["error_count"] == 0 and data["valid"] is True
    assert 0 < data["top1_hits"] <= data["top3_hits"] < data["question_count"]
    assert set(data["by_form"]) == {"match", "gap"}
    assert len(data["by_hard_class"]) >= 3
    # chunk hits are scored at document level
    assert all("#" not in doc for q in data["questions"] for doc in q["retrieved"])


def test_demo_text_report_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    result = invoke("run", "handbook.demo", "handbook_bm25", "--config", str(DEMO_CONFIG))
    assert result.exit_code == 0, result.output
    rate = next(line for line in result.stdout.splitlines() if line.startswith("Top-1 hit rate:"))
    hits, count = rate.rsplit("(", 1)[1].rstrip(")").split("/")
    assert int(count) >= 40 and 0 < int(hits) < int(count)
    assert "…" not in result.stdout

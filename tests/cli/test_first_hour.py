"""The first hour of a new user (issue 13, item 6): what the commands say when something is
missing or unknown, what an import says to do next, a headline with --output, and invalid runs
that name no baseline. In-process through click, on temporary stores and folders.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "examples" / "retrieval_eval.yaml"
BEIR_MINI = ROOT / "examples" / "beir-mini"
SWITCH = "cli.store_retrievers:switchable"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder and home: no config, no store, nothing from the environment."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    return tmp_path


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


# -- read-only commands never create a store ---------------------------------------------------

READ_ONLY = [
    ["runs", "list", "handbook.demo", "handbook_bm25"],
    ["runs", "show", "1"],
    ["runs", "report", "1", "-o", "r.html"],
    ["compare", "handbook.demo", "handbook_bm25", "other"],
    ["runs", "export", "1"],
]


@pytest.mark.parametrize("args", READ_ONLY, ids=lambda a: a[0])
def test_a_read_only_command_on_a_missing_store_names_it_and_creates_nothing(
    home: Path, args: list[str]
) -> None:
    default = home / "home" / "results.sqlite"
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    assert f"no result store at {default}: the file does not exist" in result.stderr
    assert "retrieval-eval run SET RETRIEVER" in result.stderr
    assert not (home / "home").exists()
    # a URL the fast path does not read (a query) goes through SQLAlchemy: same answer
    elsewhere = home / "elsewhere" / "r.sqlite"
    result = invoke(*args, "--db", f"sqlite:///{elsewhere}?timeout=5")
    assert result.exit_code == 2 and str(elsewhere) in result.stderr
    assert not elsewhere.parent.exists()


def test_db_url_prints_the_url_and_says_there_is_no_store_yet(home: Path) -> None:
    result = invoke("db", "url")
    assert result.exit_code == 0
    assert result.stdout == f"sqlite:///{home / 'home' / 'results.sqlite'}\n"
    assert "no store there yet" in result.stderr
    assert not (home / "home").exists()


def test_a_read_only_command_creates_no_tables_in_an_empty_postgresql_schema(
    home: Path, pg_url: str
) -> None:
    from store.builders import pg_schema

    from retrieval_eval.store import Store

    with pg_schema(pg_url) as url:
        result = invoke("runs", "list", "handbook.demo", "handbook_bm25", "--db", url)
        assert result.exit_code == 2
        assert "holds no retrieval-eval tables yet" in result.stderr
        with Store(url) as store:
            assert store.revision() is None  # nothing was migrated


# -- unknown names -----------------------------------------------------------------------------


def test_without_a_config_an_unknown_set_says_where_configs_were_looked_for(home: Path) -> None:
    result = invoke("run", "handbook.demo", "handbook_bm25")
    assert result.exit_code == 2
    assert "unknown golden set 'handbook.demo'" in result.stderr
    assert "no config file found" in result.stderr
    assert "$RETRIEVAL_EVAL_CONFIG: not set" in result.stderr
    assert str(home / "work" / "retrieval_eval.yaml") in result.stderr


def test_unknown_names_suggest_the_closest_known_ones(home: Path) -> None:
    config = ["--config", str(DEMO_CONFIG)]
    result = invoke("run", "handbok.demo", "handbook_bm25", *config)
    assert result.exit_code == 2
    assert "unknown golden set 'handbok.demo' (did you mean 'handbook.demo'?)" in result.stderr
    assert "no config file found" not in result.stderr  # one was found
    result = invoke("run", "handbook.demo", "handbook-bm25", *config)
    assert result.exit_code == 2
    assert "unknown retriever 'handbook-bm25' (did you mean 'handbook_bm25'?)" in result.stderr
    # nothing close: no guess
    result = invoke("run", "handbook.demo", "zzz", *config)
    assert result.exit_code == 2 and "did you mean" not in result.stderr


# -- import: what to do next -------------------------------------------------------------------


def test_import_beir_prints_config_lines_and_a_run_command_that_work(home: Path) -> None:
    result = invoke("sets", "import-beir", str(BEIR_MINI))
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "wrote beir_mini.test.yaml: set 'beir_mini.test', 6 questions, 7 targets" in out
    assert "Next: create retrieval_eval.yaml" in out
    # paste the printed lines into the config, then type the printed command
    block = out.split("(paths relative to it):\n", 1)[1].split("then run:\n", 1)
    (home / "work" / "retrieval_eval.yaml").write_text(block[0])
    command = block[1].splitlines()[0].split()
    assert command[:4] == ["retrieval-eval", "run", "beir_mini.test", "beir_mini_test_bm25"]
    run = invoke(*command[1:], "--format", "json", "--no-save")
    assert run.exit_code == 0, run.output
    assert json.loads(run.stdout)["question_count"] == 6


def test_import_paths_are_relative_to_the_config_in_use(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    configs = home / "configs"
    configs.mkdir()
    (configs / "eval.yaml").write_text("sets: []\n")
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(configs / "eval.yaml"))
    out_file = home / "sets" / "odd name.yaml"
    out_file.parent.mkdir()
    result = invoke("sets", "import-beir", str(BEIR_MINI), "-o", str(out_file))
    assert result.exit_code == 0, result.output
    assert f"Next: add to {configs / 'eval.yaml'}" in result.stdout
    lines = result.stdout.split("(paths relative to it):\n", 1)[1].split("then run:")[0]
    parsed = yaml.safe_load(lines)
    assert parsed["sets"] == ["../sets/odd name.yaml"]  # quoted where YAML needs it
    corpus = parsed["retrievers"]["beir_mini_test_bm25"]["corpus"]
    assert (configs / corpus).resolve() == (BEIR_MINI / "corpus.jsonl").resolve()


def test_import_trec_says_to_name_a_retriever(home: Path) -> None:
    result = invoke(
        "sets", "import-trec", "--topics", str(BEIR_MINI / "queries.jsonl"), "--qrels",
        str(BEIR_MINI / "qrels" / "test.tsv"), "--identifier", "mini.trec",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "  sets:\n    - mini.trec.yaml\nthen run:\n" in result.stdout
    assert "  retrieval-eval run mini.trec RETRIEVER\n" in result.stdout
    assert "module:function" in result.stdout


# -- --output: the terminal still gets the headline --------------------------------------------


def test_output_file_leaves_a_one_line_headline_on_the_terminal(home: Path) -> None:
    config = ["--config", str(DEMO_CONFIG)]
    result = invoke(
        "run", "handbook.demo", "handbook_bm25", *config, "--output", "r.md", "--format", "markdown"
    )
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    headline, written = result.stderr.splitlines()
    assert written == "report written to r.md"
    assert re.fullmatch(
        r"BASELINE  handbook\.demo × handbook_bm25, run 1: top-1 \d+\.\d% \(\d+/46\) "
        r"\[\d+\.\d%, \d+\.\d%\], top-3 \d+\.\d% \(\d+/46\) \[\d+\.\d%, \d+\.\d%\]; errors 0/46",
        headline,
    ), headline
    assert (home / "work" / "r.md").read_text().startswith("**🆕 baseline**")
    again = invoke("run", "handbook.demo", "handbook_bm25", *config, "--output", "r.md")
    assert "NO REGRESSION  handbook.demo × handbook_bm25, run 2 vs baseline run 1" in again.stderr
    assert "Δ +0.0 pts" in again.stderr


# -- an invalid run names no baseline ----------------------------------------------------------


def test_an_invalid_run_names_no_baseline_anywhere(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = f"sqlite:///{home / 'r.sqlite'}"
    args = ["run", "handbook.demo", SWITCH, "--config", str(DEMO_CONFIG), "--db", db]
    monkeypatch.setenv("STORE_CLI_MODE", "perfect")
    assert invoke(*args).exit_code == 0  # run 1: a baseline exists
    monkeypatch.setenv("STORE_CLI_MODE", "down")
    text = invoke(*args)
    assert text.exit_code == 3
    assert "Verdict: INVALID RUN\n" in text.stdout
    markdown = invoke(*args, "--format", "markdown", "--summary")
    assert markdown.stdout.startswith("**⚠️ invalid run** · handbook.demo × ")
    data = json.loads(invoke(*args, "--format", "json").stdout)
    assert data["regression"]["baseline_run_id"] is None
    for result in (text, markdown):
        assert "baseline run" not in result.stdout
    history = invoke("runs", "list", "handbook.demo", SWITCH, "--db", db)
    invalid_rows = [line for line in history.stdout.splitlines() if "(invalid)" in line]
    assert len(invalid_rows) == 3
    assert all(not re.search(r"\(invalid\)\W+1\b", row) for row in invalid_rows)
    rows = json.loads(
        invoke("runs", "list", "handbook.demo", SWITCH, "--db", db, "--format", "json").stdout
    )
    assert [r["baseline_run_id"] for r in rows if r["status"] == "invalid"] == [None] * 3

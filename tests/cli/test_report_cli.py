"""Reports on the command line: --summary, $GITHUB_STEP_SUMMARY, --format csv, show --per-query,
runs report. In-process through click, on the demo config and a SQLite store."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ["--config", str(ROOT / "examples" / "retrieval_eval.yaml")]
SWITCH = "cli.store_retrievers:switchable"


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    for name in ("RETRIEVAL_EVAL_DB", "RETRIEVAL_EVAL_CONFIG", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("STORE_CLI_MODE", "perfect")
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run(db: str, *args: str, mode: str = "perfect", monkeypatch: pytest.MonkeyPatch) -> Result:
    monkeypatch.setenv("STORE_CLI_MODE", mode)
    return invoke("run", "handbook.demo", SWITCH, *CONFIG, "--db", db, *args)


def test_run_summary_in_each_format(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    text = run(db, "--summary", monkeypatch=monkeypatch)
    assert text.exit_code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == f"BASELINE  handbook.demo × {SWITCH}, run 1"
    assert lines[1].startswith("Top-1: 100.0% (46/46) 95% CI [92.3%, 100.0%]")
    assert "Per question" not in text.stdout and "Saved as run" not in text.stdout
    regressed = run(db, "--summary", "--format", "markdown", mode="empty", monkeypatch=monkeypatch)
    assert regressed.exit_code == 0
    assert regressed.stdout.startswith(f"**❌ regression** · handbook.demo × {SWITCH}, run 2 vs")
    # an empty answer still hits the 3 no-result questions
    assert "| top-1 | 6.5% (3/46) | [2.2%, 17.5%] | -93.5 pts | [-97.8, -80.1] pts |" in (
        regressed.stdout
    )
    assert "Flipped questions: 43 at top-1 (43 hit→miss, 0 miss→hit" in regressed.stdout
    assert "Regressed: top-1 -93.5 pts (max drop 10.0 pts)" in regressed.stdout
    assert "<details>" not in regressed.stdout
    small = json.loads(run(db, "--summary", "--format", "json", monkeypatch=monkeypatch).stdout)
    assert small["run_id"] == 3 and small["state"] == "no_regression"
    # a regressed run never becomes the baseline: run 3 is compared with run 1, flip for flip
    assert (small["baseline_run_id"], small["top1_delta"]) == (1, 0.0)
    low, high = small["top1_delta_ci"]
    assert low == pytest.approx(-high) and 0 < high < 0.1
    assert "questions" not in small


def test_summary_has_no_csv_form(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result = run(db, "--summary", "--format", "csv", monkeypatch=monkeypatch)
    assert result.exit_code == 2 and "--summary has no CSV form" in result.stderr
    assert not Path(db.removeprefix("sqlite:///")).exists()  # refused before anything ran


def test_run_appends_the_markdown_headline_to_the_github_step_summary(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("## earlier step\n", encoding="utf-8")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    first = run(db, "--format", "json", monkeypatch=monkeypatch)  # whatever the format
    assert first.exit_code == 0
    second = run(db, monkeypatch=monkeypatch)
    assert second.exit_code == 0
    written = summary.read_text(encoding="utf-8")
    assert written.startswith("## earlier step\n**🆕 baseline** · handbook.demo")
    assert f"**✅ no regression** · handbook.demo × {SWITCH}, run 2 vs baseline run 1" in written
    assert written.count("| top-1 | 100.0% (46/46) | [92.3%, 100.0%] |") == 2
    assert "<details>" not in written  # the headline only


def test_an_unwritable_step_summary_is_a_warning(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path / "no" / "such" / "dir" / "f.md"))
    result = run(db, monkeypatch=monkeypatch)
    assert result.exit_code == 0
    assert "warning: could not append to $GITHUB_STEP_SUMMARY" in result.stderr


def test_csv_from_run_and_from_show_agree(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    ran = run(db, "--format", "csv", "--cutoffs", "1,3,5", monkeypatch=monkeypatch)
    assert ran.exit_code == 0
    rows = list(csv.DictReader(io.StringIO(ran.stdout, newline="")))
    assert len(rows) == 46 and "ndcg@5" in rows[0] and "Saved as run" not in ran.stdout
    assert all(row["top1_hit"] == "1" for row in rows)
    shown = invoke("runs", "show", "1", "--db", db, "--format", "csv")
    assert shown.exit_code == 0
    assert shown.stdout == ran.stdout


def test_show_summary_and_per_query(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    run(db, monkeypatch=monkeypatch)
    run(db, mode="empty", monkeypatch=monkeypatch)
    summary = invoke("runs", "show", "2", "--db", db, "--summary", "--format", "markdown")
    assert summary.stdout.startswith("**❌ regression**") and "<details>" not in summary.stdout
    full = invoke("runs", "show", "2", "--db", db, "--format", "markdown")
    assert full.stdout.startswith(summary.stdout)
    assert full.stdout.rstrip().endswith(
        "</details>\n\nRun 2 (valid), saved " + full.stdout.rstrip()[-20:]
    )
    lines = invoke("runs", "show", "1", "--db", db, "--per-query").stdout.splitlines()
    assert lines[0].split("\t") == ["hit_rate@1".ljust(22), "refund-eu-monthly", "1.0000"]
    assert f"{'num_q':<22}\tall\t46" in lines and f"{'hit_rate@1':<22}\tall\t1.0000" in lines
    refused = invoke("runs", "show", "1", "--db", db, "--per-query", "--format", "json")
    assert refused.exit_code == 2 and "--per-query" in refused.stderr


def test_report_html_writes_one_file(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(db, monkeypatch=monkeypatch)
    target = tmp_path / "run1.html"
    result = invoke("runs", "report", "1", "-o", str(target), "--db", db)
    assert result.exit_code == 0 and "written to" in result.stderr
    page = target.read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "🆕 baseline" in page
    assert invoke("runs", "report", "1", "-o", "-", "--db", db).stdout == page
    missing = invoke("runs", "report", "9", "-o", str(target), "--db", db)
    assert missing.exit_code == 2 and "no stored run with id 9" in missing.stderr
    assert invoke("runs", "report", "1", "--db", db).stdout == page  # no -o: stdout


def test_history_and_compare_show_intervals(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval_eval.evaluation.intervals import paired_difference, wilson

    run(db, monkeypatch=monkeypatch)
    run(db, mode="empty", monkeypatch=monkeypatch)
    rows = json.loads(
        invoke("runs", "list", "handbook.demo", SWITCH, "--db", db, "--format", "json").stdout
    )
    assert rows[0]["top1_hit_rate_ci"] == list(wilson(3, 46))  # type: ignore[arg-type]
    assert rows[1]["top1_hit_rate_ci"] == list(wilson(46, 46))  # type: ignore[arg-type]
    table = invoke("runs", "list", "handbook.demo", SWITCH, "--db", db).stdout
    assert "6.5% [2.2%, 17.5%]" in table and "100.0% [92.3%, 100.0%]" in table
    monkeypatch.setenv("STORE_CLI_MODE", "empty")
    invoke("run", "handbook.demo", "cli.store_retrievers:empty", *CONFIG, "--db", db)
    args = ("compare", "handbook.demo", SWITCH, "cli.store_retrievers:empty", "--db", db)
    data = json.loads(invoke(*args, "--format", "json").stdout)
    # run 2 and the empty retriever both hit exactly the 3 no-result questions: no discordant pair
    versus = data["entries"][1]["versus"]
    assert versus["top1_delta_ci"] == list(paired_difference(3, 0, 0, 43))  # type: ignore[arg-type]
    assert data["entries"][1]["top1_hit_rate_ci"] == list(wilson(3, 46))  # type: ignore[arg-type]
    text = invoke(*args).stdout
    assert "+0.0 [-" in text and "0 / 0" in text  # the change and its paired interval
    assert "[2.2%, 17.5%]" in text

"""The store on the command line: run's verdict and exit codes, history, show, compare, prune,
baseline accept, db upgrade / replay / url. In-process through click, on the demo config.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store
from retrieval_eval.store.names import HEAD

ROOT = Path(__file__).resolve().parents[2]
DEMO = [
    "handbook.demo",
    "handbook_bm25",
    "--config",
    str(ROOT / "examples" / "retrieval_eval.yaml"),
]
SWITCH = "cli.store_retrievers:switchable"
DOWN = "postgresql://eval:Sup3r-Secr3t@127.0.0.1:1/results"  # nothing listens on port 1
REGRESSION_KEYS = {
    "state", "baseline_run_id", "top1_delta", "top3_delta", "is_regression", "slice_regressions",
    "flipped_to_miss", "flipped_to_hit", "top3_flipped_to_miss", "top3_flipped_to_hit",
    "p_value", "summary",
}  # fmt: skip


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh SQLite store; nothing leaks into the user's home or environment."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("STORE_CLI_MODE", "perfect")
    return f"sqlite:///{tmp_path / 'results.sqlite'}"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def run_json(db: str, *args: str, retriever: str = "handbook_bm25") -> tuple[int, dict]:
    result = invoke(
        "run", "handbook.demo", retriever, *DEMO[2:], "--db", db, "--format", "json", *args
    )
    return result.exit_code, json.loads(result.stdout)


def switch_run(db: str, mode: str, monkeypatch: pytest.MonkeyPatch, *args: str) -> Result:
    monkeypatch.setenv("STORE_CLI_MODE", mode)
    return invoke("run", "handbook.demo", SWITCH, *DEMO[2:], "--db", db, *args)


# -- run ---------------------------------------------------------------------------------------


def test_first_run_is_the_baseline_and_the_next_shows_no_regression(db: str) -> None:
    first = invoke("run", *DEMO, "--db", db)
    assert first.exit_code == 0, first.output
    assert "Top-1 hit rate:" in first.stdout  # the report comes first
    assert "Verdict: BASELINE" in first.stdout
    assert first.stdout.index("Top-1 hit rate:") < first.stdout.index("Verdict:")
    assert "Saved as run 1 in sqlite:///" in first.stdout
    second = invoke("run", *DEMO, "--db", db)
    assert second.exit_code == 0
    assert "Verdict: NO REGRESSION (baseline run 1)" in second.stdout
    assert "Top-1 flips: 0 hit→miss, 0 miss→hit; McNemar exact p = 1" in second.stdout


def test_json_output_adds_run_id_saved_and_regression(db: str) -> None:
    code, first = run_json(db)
    assert code == 0
    assert (first["run_id"], first["saved"], first["regression"]["state"]) == (1, True, "baseline")
    code, second = run_json(db)
    assert code == 0
    assert second["run_id"] == 2
    regression = second["regression"]
    assert set(regression) >= REGRESSION_KEYS
    assert regression["state"] == "no_regression"
    assert regression["baseline_run_id"] == 1
    assert regression["top1_delta"] == 0
    assert regression["flipped_to_miss"] == [] and regression["p_value"] == 1.0
    assert "top1_hit_rate" in second and "questions" in second  # the core contract is intact


def test_markdown_output_ends_with_the_verdict_details(db: str) -> None:
    result = invoke("run", *DEMO, "--db", db, "--format", "markdown")
    assert result.exit_code == 0
    assert result.stdout.rstrip().endswith(f"```\n\n</details>\n\nSaved as run 1 in {db}")
    assert "<details><summary>Verdict details</summary>\n\n```\nVerdict: BASELINE" in result.stdout


def test_a_regression_exits_1_only_with_fail_on_regression(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert switch_run(db, "perfect", monkeypatch).exit_code == 0
    reported = switch_run(db, "empty", monkeypatch)
    assert reported.exit_code == 0
    assert "Verdict: REGRESSION (baseline run 1)" in reported.stdout
    failed = switch_run(db, "empty", monkeypatch, "--fail-on-regression", "--format", "json")
    assert failed.exit_code == 1
    data = json.loads(failed.stdout)
    assert data["regression"]["state"] == "regression"
    assert data["regression"]["baseline_run_id"] == 1  # the regressed run 2 is no baseline
    assert data["regression"]["flipped_to_miss"]  # question ids, hit at baseline, missed now
    assert data["regression"]["p_value"] < 0.001
    assert "error: Regression against run 1" in failed.stderr
    assert "Traceback" not in failed.output


def test_thresholds_from_the_command_line(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    switch_run(db, "perfect", monkeypatch)
    lenient = switch_run(
        db, "empty", monkeypatch, "--max-top1-drop", "1", "--max-top3-drop", "1",
        "--fail-on-regression", "--format", "json",
    )  # fmt: skip
    assert lenient.exit_code == 0
    assert json.loads(lenient.stdout)["regression"]["state"] == "no_regression"


@pytest.mark.parametrize(
    ("option", "value"),
    [("--max-top1-drop", "-0.1"), ("--max-top3-drop", "-1"), ("--max-top1-drop", "1.5")],
)
def test_bad_thresholds_exit_2(db: str, option: str, value: str) -> None:
    result = invoke("run", *DEMO, "--db", db, option, value)
    assert result.exit_code == 2
    assert option in result.stderr
    assert not Path(db.removeprefix("sqlite:///")).exists()  # nothing ran, nothing saved


def test_pinned_baseline(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    code, demo = run_json(db)
    monkeypatch.setenv("STORE_CLI_MODE", "empty")
    code, pinned = run_json(db, "--baseline", str(demo["run_id"]), retriever=SWITCH)
    assert code == 0
    assert pinned["regression"]["baseline_run_id"] == demo["run_id"]
    assert pinned["regression"]["state"] == "regression"
    unknown = invoke("run", *DEMO, "--db", db, "--baseline", "999")
    assert unknown.exit_code == 2
    assert "no stored run with id 999" in unknown.stderr


def test_no_save_compares_without_storing(db: str) -> None:
    invoke("run", *DEMO, "--db", db)
    code, data = run_json(db, "--no-save")
    assert code == 0
    assert (data["run_id"], data["saved"], data["regression"]["state"]) == (
        None,
        False,
        "no_regression",
    )
    with open_store(db) as store:
        assert len(store.history("handbook.demo", "handbook_bm25")) == 1


def test_an_invalid_run_exits_3_and_is_stored_as_invalid(db: str) -> None:
    code, data = run_json(db, retriever="cli.store_retrievers:broken")
    assert code == 3
    assert data["valid"] is False
    assert data["regression"]["state"] == "invalid_run"
    with open_store(db) as store:
        assert store.get_run(data["run_id"]).status == "invalid"


def test_an_unreachable_store_exits_3_spools_and_replays(db: str, tmp_path: Path) -> None:
    down = invoke("run", *DEMO, "--db", DOWN, "--format", "json")
    assert down.exit_code == 3
    data = json.loads(down.stdout)  # the report is still printed
    assert data["question_count"] == 46
    assert (data["saved"], data["run_id"]) == (False, None)
    assert data["regression"]["state"] == "not_comparable"
    spool = Path(data["spool_path"])
    assert spool.parent == tmp_path / "home" / "spool" and spool.is_file()
    assert str(spool) in down.stderr and "db flush" in down.stderr
    assert "Sup3r-Secr3t" not in down.output
    assert "eval:***@127.0.0.1:1" in down.stderr

    still_down = invoke("db", "flush", "--db", DOWN)
    assert still_down.exit_code == 3
    assert spool.is_file()
    replayed = invoke("db", "flush", "--db", db)
    assert replayed.exit_code == 0, replayed.output
    assert "saved 1 spooled run(s)" in replayed.stdout
    assert not spool.exists()
    with open_store(db) as store:
        (run,) = store.history("handbook.demo", "handbook_bm25")
    assert run.result.run_key == data["run_key"]
    assert run.verdict_state == "baseline"
    assert invoke("db", "flush", "--db", db).stdout.startswith("no spooled runs in ")


def test_bad_store_urls_exit_2_before_running(db: str) -> None:
    result = invoke("run", *DEMO, "--db", "mysql://root:hunter2@localhost/x")
    assert result.exit_code == 2
    assert "unsupported store backend 'mysql'" in result.stderr
    assert "hunter2" not in result.output
    assert "Top-1 hit rate" not in result.stdout


def test_the_store_can_be_postgresql(db: str, pg_url: str) -> None:
    from store.builders import pg_schema

    with pg_schema(pg_url) as url:
        assert run_json(url)[1]["regression"]["state"] == "baseline"
        code, second = run_json(url)
        assert (code, second["regression"]["state"]) == (0, "no_regression")
        history = invoke("runs", "list", "handbook.demo", "handbook_bm25", "--db", url)
        assert "no_regression" in history.stdout and "baseline" in history.stdout


# -- history, show, compare --------------------------------------------------------------------


def test_history_lists_runs_newest_first(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for mode in ("perfect", "empty", "perfect"):
        switch_run(db, mode, monkeypatch)
    text = invoke("runs", "list", "handbook.demo", SWITCH, "--db", db)
    assert text.exit_code == 0
    lines = [line for line in text.stdout.splitlines() if line.strip().startswith(("│", "|"))]
    body = [line for line in lines if any(ch.isdigit() for ch in line.split("│")[1])]
    assert [line.split("│")[1].strip() for line in body] == ["3", "2", "1"]
    assert "regression" in body[1] and "100.0%" in body[2]
    data = json.loads(
        invoke("runs", "list", "handbook.demo", SWITCH, "--db", db, "--format", "json").stdout
    )
    assert [r["id"] for r in data] == [3, 2, 1]
    assert [r["verdict_state"] for r in data] == ["no_regression", "regression", "baseline"]
    assert data[0]["baseline_run_id"] == 1
    limited = json.loads(
        invoke(
            "runs", "list", "handbook.demo", SWITCH, "--db", db, "--format", "json", "--limit", "1"
        ).stdout
    )
    assert [r["id"] for r in limited] == [3]


def test_history_of_an_unknown_pair_exits_2_naming_what_exists(db: str) -> None:
    invoke("run", *DEMO, "--db", db)
    result = invoke("runs", "list", "handbook.demo", "nope", "--db", db)
    assert result.exit_code == 2
    assert "retrievers with runs on this set: handbook_bm25" in result.stderr


def test_show_prints_a_stored_run_in_full(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    switch_run(db, "perfect", monkeypatch)
    switch_run(db, "empty", monkeypatch)
    text = invoke("runs", "show", "2", "--db", db)
    assert text.exit_code == 0
    assert text.stdout.startswith("Run 2 (valid), saved ")
    assert "Per question" in text.stdout and "Top-1 hit rate:" in text.stdout
    assert "Verdict: REGRESSION (baseline run 1)" in text.stdout
    data = json.loads(invoke("runs", "show", "2", "--db", db, "--format", "json").stdout)
    assert data["run_id"] == 2
    assert data["regression"]["state"] == "regression"
    assert len(data["questions"]) == data["question_count"] == 46
    missing = invoke("runs", "show", "77", "--db", db)
    assert missing.exit_code == 2 and "no stored run with id 77" in missing.stderr


def test_compare_puts_two_retrievers_side_by_side(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    invoke("run", *DEMO, "--db", db)
    switch_run(db, "perfect", monkeypatch)
    result = invoke("compare", "handbook.demo", "handbook_bm25", SWITCH, "--db", db)
    assert result.exit_code == 0, result.output
    assert "handbook_bm25" in result.stdout and "100.0%" in result.stdout
    assert "Questions where they disagree on top-1" in result.stdout
    data = json.loads(
        invoke(
            "compare", "handbook.demo", "handbook_bm25", SWITCH, "--db", db, "--format", "json"
        ).stdout
    )
    # the perfect retriever ranks first and is the reference
    assert [e["run_id"] for e in data["entries"]] == [2, 1]
    assert data["reference"] == SWITCH and data["same_labels"] is True
    # it hits everything, so every disagreement is a BM25 top-1 miss
    assert data["differences"] and all(
        d["outcomes"][SWITCH]["top1_hit"] and not d["outcomes"]["handbook_bm25"]["top1_hit"]
        for d in data["differences"]
    )
    bm25 = data["entries"][1]["versus"]
    assert bm25["top1_only_this"] == 0 and bm25["top1_only_reference"] > 0
    assert bm25["p_value"] < 0.05 and bm25["significant"] is True
    missing = invoke("compare", "handbook.demo", "handbook_bm25", "ghost", "--db", db)
    assert missing.exit_code == 2 and "ghost" in missing.stderr


# -- prune, baseline accept, db ----------------------------------------------------------------


def test_prune_keeps_the_current_baseline(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    switch_run(db, "perfect", monkeypatch)
    switch_run(db, "empty", monkeypatch)
    result = invoke("runs", "prune", "--older-than", "0", "--db", db)
    assert result.exit_code == 0
    assert result.stdout.startswith("pruned 1 run(s) older than 0 day(s)")
    with open_store(db) as store:
        assert [r.id for r in store.history("handbook.demo", SWITCH)] == [1]
    negative = invoke("runs", "prune", "--older-than", "-3", "--db", db)
    assert negative.exit_code == 2 and "zero or more" in negative.stderr


def test_baseline_accept_makes_a_regression_the_baseline(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    switch_run(db, "perfect", monkeypatch)
    switch_run(db, "empty", monkeypatch)
    accepted = invoke("runs", "accept", "2", "--db", db)
    assert accepted.exit_code == 0
    assert accepted.stdout.startswith(f"run 2 accepted as baseline for handbook.demo × {SWITCH}")
    data = json.loads(switch_run(db, "empty", monkeypatch, "--format", "json").stdout)
    assert (data["regression"]["state"], data["regression"]["baseline_run_id"]) == (
        "no_regression",
        2,
    )
    assert invoke("runs", "accept", "42", "--db", db).exit_code == 2


def test_db_upgrade_is_idempotent_and_url_is_masked(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = invoke("db", "upgrade", "--db", db)
    assert first.exit_code == 0 and f"upgraded from empty to {HEAD}" in first.stdout
    again = invoke("db", "upgrade", "--db", db)
    assert f"already at revision {HEAD}" in again.stdout
    assert invoke("db", "upgrade", "--db", DOWN).exit_code == 3
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", "postgresql://eval:Sup3r-Secr3t@db.internal/results")
    shown = invoke("db", "url")
    assert shown.stdout.strip() == "postgresql+psycopg://eval:***@db.internal/results"

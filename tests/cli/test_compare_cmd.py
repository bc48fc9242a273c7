"""``retrieval-eval compare``: N retrievers from a real SQLite store, every format, every error
and its exit code. In-process through click; the runs are saved with the store's own ``save``.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from store.builders import make_run, question

from retrieval_eval.cli import cli
from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import QuestionResult
from retrieval_eval.reports.leaderboard import CSV_COLUMNS, HOLES_COLUMNS
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.workflows.leaderboard import compare_runs, latest_runs

SET = "demo.set"
#              top-1 of 12: 10, 7 (+2 at top-3) and 2
PATTERNS = {"best": "111111111100", "middle": "111111100033", "worst": "110000000000"}
LEADERBOARD_KEYS = {
    "set", "reference", "reference_is_best", "alpha", "same_labels", "warnings", "entries",
    "differences",
}  # fmt: skip
ENTRY_KEYS = {
    "name", "retriever", "run_id", "run_date", "labels_fingerprint", "question_count",
    "top1_hits", "top3_hits", "top1_hit_rate", "top3_hit_rate", "top1_hit_rate_ci",
    "top3_hit_rate_ci", "mrr", "mrr_metric", "ndcg", "ndcg_metric", "error_count", "latency_p50_ms",
    "latency_p95_ms", "is_reference", "versus", "valid", "holes_depth", "holes_unjudged",
    "holes_slots", "holes_share",
}  # fmt: skip
VERSUS_KEYS = {
    "shared_questions", "top1_only_this", "top1_only_reference", "top1_delta", "top1_delta_ci",
    "p_value", "p_holm", "significant",
}  # fmt: skip


def pattern(top1: str, prefix: str = "q") -> list[QuestionResult]:
    return [question(f"{prefix}{i:03d}", c == "1", c in "13") for i, c in enumerate(top1)]


def save(url: str, retriever: str, marks: str, **kwargs: object) -> int:
    run = make_run(pattern(marks), retriever=retriever, **kwargs)  # type: ignore[arg-type]
    with open_store(url) as store:
        return store.runs.save(run, detect_regression(run, None, Thresholds()))


@pytest.fixture
def db(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A SQLite store holding the three retrievers of PATTERNS (run ids 1, 2, 3)."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    for name, marks in PATTERNS.items():
        save(url, name, marks)
    return url


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def compare(db: str, *args: str) -> Result:
    return invoke("compare", *args, "--db", db)


def test_text_ranks_three_retrievers_and_marks_the_significant_one(db: str) -> None:
    result = compare(db, SET, "worst", "middle", "best")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"{SET}: 3 retrievers, compared with best (the best top-1)"
    board = [line.split()[:2] for line in lines[2:5]]
    assert board == [["1", "best"], ["2", "middle"], ["3", "worst"]]
    assert "83.3% [55.2%, 95.3%]" in lines[2]  # best: 10 of 12, Wilson
    against = {line.split()[0]: line for line in lines if line.startswith(("middle ", "worst "))}
    assert against["worst"].rstrip().endswith("*")  # 8 discordant, all one way
    assert not against["middle"].rstrip().endswith("*")  # 3 of 12: noise
    assert "-25.0 [" in against["middle"] and "0 / 3" in against["middle"]
    assert "Holm-corrected across the 2 comparisons" in " ".join(result.stdout.split())
    assert "Questions where they disagree on top-1 (8):" in result.stdout
    assert result.stderr == ""


def test_json_is_the_model_with_stable_keys(db: str) -> None:
    data = json.loads(compare(db, SET, "best", "middle", "worst", "--format", "json").stdout)
    assert set(data) == LEADERBOARD_KEYS
    assert all(set(entry) == ENTRY_KEYS for entry in data["entries"])
    assert all(set(e["versus"]) == VERSUS_KEYS for e in data["entries"] if e["versus"])
    with open_store(db) as store:
        expected = compare_runs(latest_runs(store, SET, ["best", "middle", "worst"]))
    assert data == expected.model_dump(mode="json")
    assert [d["id"] for d in data["differences"]] == [f"q{i:03d}" for i in range(2, 10)]


def test_markdown_tables_and_the_disagreements_folded(db: str) -> None:
    text = compare(db, SET, "best", "middle", "worst", "--format", "markdown").stdout
    assert text.startswith(f"### {SET}: 3 retrievers, compared with best")
    assert "| # | retriever | run |" in text and "| ---: | --- | ---: |" in text
    assert "| worst | 12 | 0 / 8 |" in text and text.count("| \\* |") == 1
    assert "<details><summary>Questions where they disagree on top-1 (8)</summary>" in text


def test_csv_has_one_row_per_retriever(db: str) -> None:
    text = compare(db, SET, "best", "middle", "worst", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert list(rows[0]) == [*CSV_COLUMNS, *HOLES_COLUMNS]  # holes last: readers by position
    assert [(r["rank"], r["retriever"], r["is_reference"]) for r in rows] == [
        ("1", "best", "1"),
        ("2", "middle", "0"),
        ("3", "worst", "0"),
    ]
    assert rows[0]["p_value"] == "" and float(rows[2]["p_value"]) == pytest.approx(2 / 2**8)
    assert rows[2]["significant"] == "1" and rows[1]["significant"] == "0"
    assert float(rows[1]["top1_hit_rate"]) == pytest.approx(7 / 12)


def test_csv_cells_never_start_a_formula(db: str) -> None:
    save(db, "=HYPERLINK(1)", "100000000000")
    text = compare(db, SET, "best", "=HYPERLINK(1)", "--format", "csv").stdout
    rows = list(csv.DictReader(io.StringIO(text)))
    assert rows[1]["retriever"] == "'=HYPERLINK(1)" and rows[1]["name"] == "'=HYPERLINK(1)"


def test_reference_and_alpha(db: str) -> None:
    args = (SET, "best", "middle", "worst", "--format", "json")
    data = json.loads(compare(db, *args, "--reference", "middle").stdout)
    assert data["reference"] == "middle" and data["reference_is_best"] is False
    best = data["entries"][0]["versus"]
    assert best["top1_only_this"] == 3 and best["top1_delta"] == pytest.approx(0.25)
    loose = json.loads(compare(db, *args, "--alpha", "0.5").stdout)
    assert loose["alpha"] == 0.5 and loose["entries"][1]["versus"]["significant"] is True
    text = compare(db, SET, "best", "middle", "--alpha", "0.5").stdout
    assert "at α = 0.5:" in text


def test_the_old_two_retriever_form_is_the_n2_case(db: str) -> None:
    data = json.loads(compare(db, SET, "middle", "worst", "--format", "json").stdout)
    assert [e["name"] for e in data["entries"]] == ["middle", "worst"]
    assert data["same_labels"] is True and data["differences"]
    worst = data["entries"][1]["versus"]
    assert (worst["top1_only_this"], worst["top1_only_reference"]) == (0, 5)


def test_explicit_runs(db: str) -> None:
    later = save(db, "best", "000000000000", day=1)
    data = json.loads(compare(db, "--runs", f"1,{later}", "--format", "json").stdout)
    assert [e["name"] for e in data["entries"]] == ["best (run 1)", f"best (run {later})"]
    # the latest run of "best" is now the empty one
    latest = json.loads(compare(db, SET, "best", "worst", "--format", "json").stdout)
    assert {e["run_id"] for e in latest["entries"]} == {later, 3}


@pytest.mark.parametrize(
    "args,message",
    [
        ((SET, "best"), "a comparison needs at least two retrievers, got 1"),
        ((SET, "best", "best"), "retriever named more than once: best"),
        ((SET, "best", "ghost"), "no stored runs for set 'demo.set' and retriever 'ghost'"),
        (("other.set", "best", "worst"), "sets with runs: demo.set"),
        ((SET, "best", "worst", "--reference", "middle"), "'middle' is not among"),
        (("--runs", "1"), "at least two runs, got 1"),
        (("--runs", "1,1"), "run listed more than once: 1"),
        (("--runs", "1,99"), "no stored run with id 99"),
        (("--runs", "1,x"), "expected run ids separated by commas"),
        (("--runs", "0,1"), "run ids are whole numbers from 1"),
        ((), "give SET and two or more retrievers, or --runs"),
        ((SET, "best", "--runs", "1,2"), "--runs takes the place of SET"),
        ((SET, "best", "worst", "--alpha", "0"), "--alpha"),
        ((SET, "best", "worst", "--alpha", "1"), "--alpha"),
        ((SET, "best", "worst", "--format", "xml"), "--format"),
    ],
)
def test_errors_exit_2_with_a_message(db: str, args: tuple[str, ...], message: str) -> None:
    result = compare(db, *args)
    assert result.exit_code == 2
    assert message in result.stderr
    assert result.stdout == ""


def test_ghost_lists_the_retrievers_with_runs(db: str) -> None:
    result = compare(db, SET, "best", "ghost")
    assert "retrievers with runs on this set: best, middle, worst" in result.stderr


def test_runs_of_different_sets_are_refused(db: str) -> None:
    other = save(db, "best", "1111", set_identifier="other.set")
    result = compare(db, "--runs", f"1,{other}")
    assert result.exit_code == 2
    assert f"one golden set, got run 1: 'demo.set', run {other}: 'other.set'" in result.stderr


def test_different_labels_warn_on_stderr_and_compare(db: str) -> None:
    save(db, "edited", "111111111111", fingerprint="fp-2")
    result = compare(db, SET, "best", "edited", "--format", "json")
    assert result.exit_code == 0
    assert result.stderr.startswith("warning: the runs used different labels")
    data = json.loads(result.stdout)  # stdout stays JSON
    assert data["same_labels"] is False and data["entries"][1]["versus"] is not None


def test_an_unreachable_store_exits_3() -> None:
    result = invoke("compare", SET, "a", "b", "--db", "postgresql://u:Secr3t@127.0.0.1:1/x")
    assert result.exit_code == 3
    assert "Secr3t" not in result.stderr


def test_compare_loads_the_store_but_not_pandas(db: str, tmp_path: Path) -> None:
    """The runs are read through the Store (SQLAlchemy); only the text board's tables load rich."""
    from cli.test_startup import HEAVY, loaded

    watch = HEAVY | {"rich", "retrieval_eval.config.models"}
    for fmt in ("text", "json", "markdown", "csv"):
        args = ("compare", SET, "best", "middle", "worst", "--format", fmt, "--db", db)
        drawn = ["rich", "sqlalchemy"] if fmt == "text" else ["sqlalchemy"]
        assert loaded(tmp_path, *args, watch=watch)[:2] == (0, drawn), fmt


def test_markdown_keeps_stored_names_inert(db: str) -> None:
    """A retriever name with HTML and a pipe neither renders on GitHub nor breaks a table."""
    name = "<b>x|y</b>"
    save(db, name, "100000000000")
    text = compare(db, SET, "best", name, "--format", "markdown").stdout
    assert "<b>" not in text
    assert "| &lt;b&gt;x\\|y&lt;/b&gt; | 12 |" in text


def test_an_invalid_run_is_marked_in_every_format_and_warned_about(db: str) -> None:
    errored = [question(f"q{i:03d}", False, error="timeout") for i in range(6)]
    run = make_run(errored + pattern("111111")[6:] + pattern("000000111111")[6:], day=1)
    with open_store(db) as store:
        invalid = store.runs.save(run.model_copy(update={"retriever": "broken"}))
        assert store.get_run(invalid).status == "invalid"
    runs = ("--runs", f"1,{invalid}")
    text = compare(db, *runs)
    assert text.exit_code == 0, text.output
    assert "broken (invalid run)" in text.stdout
    assert f"warning: broken (run {invalid}) is an invalid run (6 of 12 questions errored)" in (
        text.stderr
    )
    assert "broken (invalid run)" in compare(db, *runs, "--format", "markdown").stdout
    rows = {
        r["name"]: r
        for r in csv.DictReader(io.StringIO(compare(db, *runs, "--format", "csv").stdout))
    }
    assert rows["broken"]["valid"] == "0" and rows["best"]["valid"] == "1"
    data = json.loads(compare(db, *runs, "--format", "json").stdout)
    assert {e["name"]: e["valid"] for e in data["entries"]} == {"best": True, "broken": False}
    assert any("invalid run" in w for w in data["warnings"])
    assert "(invalid run)" not in compare(db, SET, "best", "worst").stdout  # valid runs: no mark


def test_mixed_labels_name_each_run_once(db: str) -> None:
    later = save(db, "best", "111111111100", fingerprint="fp-2", day=1)
    result = compare(db, "--runs", f"1,{later}")
    assert result.exit_code == 0, result.output
    assert f"best (run 1); best (run {later})" in result.stderr
    assert "(run 1) (run 1)" not in result.output


def test_holes_are_the_unlabelled_share_of_each_top_k_at_the_depth_kept(db: str) -> None:
    data = json.loads(compare(db, SET, "best", "worst", "--format", "json").stdout)
    for entry in data["entries"]:
        marks = PATTERNS[entry["retriever"]]
        # the builders' rankings: a hit at 1 or 3 is [target, other], a miss [other]
        slots = sum(2 if c in "13" else 1 for c in marks)
        # runs keep their top 3: asked for 10, the holes are counted at 3
        assert (entry["holes_depth"], entry["holes_slots"]) == (3, slots)
        assert entry["holes_unjudged"] == len(marks)  # every "other" is unlabelled
        assert entry["holes_share"] == pytest.approx(len(marks) / slots)
    top1 = json.loads(
        compare(db, SET, "best", "worst", "--holes-depth", "1", "--format", "json").stdout
    )
    for entry in top1["entries"]:
        marks = PATTERNS[entry["retriever"]]
        assert entry["holes_depth"] == 1
        assert entry["holes_share"] == pytest.approx(sum(c != "1" for c in marks) / len(marks))
    text = compare(db, SET, "best", "worst").stdout
    assert "holes@3" in text.splitlines()[1]
    rows = list(
        csv.DictReader(io.StringIO(compare(db, SET, "best", "worst", "--format", "csv").stdout))
    )
    assert [r["holes_depth"] for r in rows] == ["3", "3"]
    assert float(rows[0]["holes_share"]) == pytest.approx(data["entries"][0]["holes_share"])

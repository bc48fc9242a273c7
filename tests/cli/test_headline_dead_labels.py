"""The headline names dead labels, and its deltas read against rates over the same questions.

On the demo handbook (``examples/``) with five target documents deleted after a baseline, as
after an index rebuild: ten questions go stale and are left out of the comparison, so the
overall rate (over 46) falls while the delta (over the 36 compared) does not. Each headline
(text, Markdown, the $GITHUB_STEP_SUMMARY file, JSON, the one-line one) must say the labels
need attention and print the compared rates the delta is the difference of; ``history`` marks
the runs.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
GONE = [
    "support/contact.md",
    "legal/terms-summary.md",
    "legal/privacy-summary.md",
    "security/sso-saml.md",
    "help/keyboard-shortcuts.md",
]
LABELS = "5 ids no longer in the index, 10 questions left out of the comparison"
# "66.7% → 69.4% on the 36 questions compared: Δ +2.8 pts" (text) and its table-cell form
JUDGED = re.compile(
    r"(\d+\.\d)% → (\d+\.\d)% on the (\d+) questions compared\)?:? Δ? ?([+-]\d+\.\d) pts"
)
MD_JUDGED = re.compile(r"([+-]\d+\.\d) pts \((\d+\.\d)% → (\d+\.\d)% on the (\d+) questions")


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for part in ("corpus", "golden", "retrieval_eval.yaml"):
        source = EXAMPLES / part
        copy = shutil.copytree if source.is_dir() else shutil.copy
        copy(source, tmp_path / part)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    return tmp_path


def run(*args: str, env: dict[str, str] | None = None) -> str:
    db = ["--db", "sqlite:///s.sqlite", "--config", "retrieval_eval.yaml"]
    result = CliRunner().invoke(cli, [*args, *db], env=env)
    assert result.exit_code == 0, result.output
    return result.stdout


def rebuild_without_five(demo: Path) -> None:
    run("run", "handbook.demo", "handbook_bm25", "--summary")  # the baseline, run 1
    for name in GONE:
        (demo / "corpus" / name).unlink()


def test_text_headline_names_the_dead_labels_and_its_delta_matches_its_rates(demo: Path) -> None:
    rebuild_without_five(demo)
    text = run("run", "handbook.demo", "handbook_bm25", "--summary", "--fail-on-regression")
    assert f"Labels need attention: {LABELS}" in text.splitlines()[1]
    found = [JUDGED.search(line) for line in text.splitlines() if line.startswith("Top-")]
    assert len(found) == 2 and all(found), text
    for match in found:
        assert match is not None
        before, now, n, delta = match.groups()
        assert n == "36"
        assert abs(float(now) - float(before) - float(delta)) <= 0.11  # rounding only
    # the overall rate is still printed, over all 46
    assert "(25/46)" in text


def test_markdown_step_summary_and_json_headlines_say_it_too(demo: Path) -> None:
    rebuild_without_five(demo)
    step = demo / "step_summary.md"
    markdown = run(
        "run",
        "handbook.demo",
        "handbook_bm25",
        "--summary",
        "--format",
        "markdown",
        env={"GITHUB_STEP_SUMMARY": str(step)},
    )
    for page in (markdown, step.read_text()):
        assert f"labels need attention: {LABELS}" in page
        cells = MD_JUDGED.findall(page)
        assert len(cells) == 2, page
        for delta, before, now, n in cells:
            assert n == "36" and abs(float(now) - float(before) - float(delta)) <= 0.11
    document = json.loads(
        run("run", "handbook.demo", "handbook_bm25", "--summary", "--format", "json")
    )
    assert document["labels"] == f"labels need attention: {LABELS}"
    assert sorted(document["dead_ids"]) == sorted(GONE)
    assert len(document["stale_questions"]) == 10
    assert document["compared_questions"] == 36
    for key in ("top1", "top3"):
        change = document[f"{key}_current"] - document[f"{key}_baseline"]
        assert change == pytest.approx(document[f"{key}_delta"])


def test_the_one_line_headline_and_history_mark_the_run(demo: Path) -> None:
    rebuild_without_five(demo)
    db = ["--db", "sqlite:///s.sqlite", "--config", "retrieval_eval.yaml"]
    result = CliRunner().invoke(
        cli, ["run", "handbook.demo", "handbook_bm25", "--output", "report.txt", *db]
    )
    assert result.exit_code == 0, result.output
    assert f"labels need attention: {LABELS}" in result.stderr
    assert "on the 36 questions compared" in result.stderr
    history = run("runs", "list", "handbook.demo", "handbook_bm25")
    assert "(labels: 5 dead ids)" in history
    assert "labels need attention: run 2 found" in history
    rows = json.loads(run("runs", "list", "handbook.demo", "handbook_bm25", "--format", "json"))
    assert [row["dead_label_count"] for row in rows] == [5, 0]


def test_a_clean_run_has_no_labels_line(demo: Path) -> None:
    run("run", "handbook.demo", "handbook_bm25", "--summary")
    text = run("run", "handbook.demo", "handbook_bm25", "--summary")
    assert "labels need attention" not in text.lower()
    assert "questions compared" not in text
    document = json.loads(
        run("run", "handbook.demo", "handbook_bm25", "--summary", "--format", "json")
    )
    assert document["labels"] is None and document["dead_ids"] == []
    assert document["compared_questions"] == 46
    assert "labels need attention" not in run("runs", "list", "handbook.demo", "handbook_bm25")

"""``run`` on two real runs (TREC run files) where a 6-question slice falls 50 points while the
run's top-1 rises: McNemar on the slice is p = 1 after Holm, so the run passes the gate
(``--fail-on-regression`` exits 0) and the verdict names the slice as too small to judge; a
config giving the slice ``severity: warn`` and the overall checks ``warn`` shows a real
overall drop as a warning, still exit 0."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from retrieval_eval.cli import cli

OTHERS, TINY = 34, 6


def _write_set(folder: Path) -> None:
    questions = [
        {
            "id": f"t{i}",
            "question": f"tiny question {i}?",
            "form": "match",
            "hard_class": "tiny",
            "expected_document_ids": [f"doc-t{i}"],
        }
        for i in range(TINY)
    ] + [
        {
            "id": f"o{i:02d}",
            "question": f"other question {i}?",
            "form": "match",
            "expected_document_ids": [f"doc-o{i:02d}"],
        }
        for i in range(OTHERS)
    ]
    data = {"identifier": "slices.demo", "name": "slices", "questions": questions}
    (folder / "slices.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


def _write_run(path: Path, hits: set[str]) -> None:
    """A TREC run: each question's own document first when it is a hit, else fourth (below the
    gated depths, but in the run, so no label looks dead)."""
    lines = []
    for i, q in enumerate([f"t{i}" for i in range(TINY)] + [f"o{i:02d}" for i in range(OTHERS)]):
        ranking = [f"doc-{q}"] if q in hits else [f"doc-w{i}-{k}" for k in range(3)] + [f"doc-{q}"]
        lines += [f"{q} Q0 {doc} {rank} {10 - rank} r" for rank, doc in enumerate(ranking, 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    _write_set(tmp_path)
    # before: the 6 tiny questions and 14 others hit (20/40); after: 3 tiny and 18 others (21/40)
    _write_run(
        tmp_path / "before.run", {f"t{i}" for i in range(6)} | {f"o{i:02d}" for i in range(14)}
    )
    _write_run(
        tmp_path / "after.run", {f"t{i}" for i in range(3)} | {f"o{i:02d}" for i in range(18)}
    )
    return tmp_path, f"sqlite:///{tmp_path / 'results.sqlite'}"


def _config(folder: Path, thresholds: str = "") -> str:
    path = folder / "retrieval_eval.yaml"
    path.write_text(
        "sets: [slices.yaml]\n"
        "retrievers:\n"
        "  before: {type: run_file, path: before.run}\n"
        "  after: {type: run_file, path: after.run}\n" + thresholds,
        encoding="utf-8",
    )
    return str(path)


def _run(config: str, db: str, retriever: str, *args: str) -> Result:
    return CliRunner().invoke(
        cli,
        ["run", "slices.demo", retriever, "--config", config, "--db", db, *args],
        catch_exceptions=False,
    )


def test_a_six_question_slice_falling_50_points_passes_the_gate(setup: tuple[Path, str]) -> None:
    folder, db = setup
    config = _config(folder)
    assert _run(config, db, "before").exit_code == 0
    text = _run(config, db, "after", "--baseline", "1", "--fail-on-regression")
    assert text.exit_code == 0, text.output
    assert "Verdict: NO REGRESSION (baseline run 1)" in text.stdout
    assert (
        "Too small to judge: hard_class=tiny top1 100.0% → 50.0% (-50.0 pts); 6 questions, "
        "Holm-adjusted p = 1, detects" in text.stdout
    )
    assert "Regressed:" not in text.stdout
    done = _run(config, db, "after", "--baseline", "1", "--format", "json", "--no-save")
    assert done.exit_code == 0
    verdict = json.loads(done.stdout)["regression"]
    assert (verdict["state"], verdict["is_regression"], verdict["slice_regressions"]) == (
        "no_regression",
        False,
        [],
    )
    tiny = verdict["slices_too_small"][0]
    assert (tiny["value"], tiny["metric"], tiny["questions"]) == ("tiny", "top1", 6)
    assert (tiny["delta"], tiny["p_holm"]) == (-0.5, 1.0)
    assert tiny["detectable_drop"] is None or tiny["detectable_drop"] > tiny["max_drop"]
    assert "Too small to judge: hard_class=tiny top1 -50.0 pts" in verdict["summary"]


def test_warn_severity_shows_a_drop_without_failing_the_gate(setup: tuple[Path, str]) -> None:
    """Run the other way round (a 2.5-point fall, the tiny slice up 50): a strict overall
    threshold of one point fires; with ``severity: warn`` it only warns (exit 0), with the
    default ``error`` it fails the gate (exit 1)."""
    folder, db = setup
    warn = _config(
        folder, "thresholds: {max_top1_drop: 0.01, max_top3_drop: 0.01, severity: warn}\n"
    )
    assert _run(warn, db, "after").exit_code == 0
    result = _run(warn, db, "before", "--baseline", "1", "--fail-on-regression", "--no-save")
    assert result.exit_code == 0, result.output
    assert "Verdict: NO REGRESSION (baseline run 1)" in result.stdout
    assert "Warned (severity warn, not a regression): top-1 -2.5 pts (max drop 1.0 pts)" in (
        result.stdout
    )
    error = _config(folder, "thresholds: {max_top1_drop: 0.01, max_top3_drop: 0.01}\n")
    failed = _run(error, db, "before", "--baseline", "1", "--fail-on-regression", "--no-save")
    assert failed.exit_code == 1
    assert "Regressed: top-1 -2.5 pts (max drop 1.0 pts)" in failed.stdout

"""``runs show`` and ``runs report`` carry the power figure of the stored run (issue 14.2).

The figure is computed from the stored run (its question count and rates) and the thresholds
of the config found for it, else the defaults, and the line says which. ``show`` stays light:
no config module when no config file is found (``tests/cli/test_startup.py``).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner
from store.builders import hits, make_run

from retrieval_eval.cli import cli
from retrieval_eval.config.models import LintOptions, Thresholds
from retrieval_eval.lint.power import run_power
from retrieval_eval.lint.render import figure_line
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import detect_regression


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[str, Path]]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    db = f"sqlite:///{tmp_path / 'results.sqlite'}"
    run = make_run(hits(30, 46))  # 46 questions, 30 hits: the demo set's size
    with open_store(db) as store:
        store.runs.save(run, detect_regression(run, None, Thresholds()))
    yield db, tmp_path


def show(db: str, *args: str) -> str:
    result = CliRunner().invoke(cli, ["runs", "show", "1", "--db", db, *args])
    assert result.exit_code == 0, result.output
    return result.stdout


def expected_lines(thresholds: Thresholds) -> list[str]:
    """The figures run_power gives for the stored run (the same questions, built again)."""
    report = run_power(make_run(hits(30, 46)), thresholds, LintOptions())
    return [figure_line(f) for f in report.figures if f.scope == "overall"]


def test_show_prints_the_power_figure_with_the_default_thresholds(
    stored: tuple[str, Path],
) -> None:
    db, _ = stored
    figures = expected_lines(Thresholds())
    assert figures[0].startswith("top-1 (threshold 10.0 pts): at 46 questions a drop needs ≥ ")
    for fmt in ("text", "markdown"):
        out = show(db, "--format", fmt)
        (line,) = [line for line in out.splitlines() if line.startswith("Power: ")]
        assert all(figure in line for figure in figures), line
        assert "thresholds: defaults (no config file found)" in line
    document = json.loads(show(db, "--format", "json"))
    assert document["power"] is not None
    overall = [f for f in document["power"]["figures"] if f["scope"] == "overall"]
    assert [f["questions"] for f in overall] == [46, 46]
    assert document["power_thresholds_from"] == "defaults (no config file found)"
    assert "power" not in json.loads(show(db, "--summary", "--format", "json"))


def test_show_uses_the_thresholds_of_the_config_it_finds(stored: tuple[str, Path]) -> None:
    db, work = stored
    (work / "retrieval_eval.yaml").write_text(
        "thresholds: {max_top1_drop: 0.2, max_top3_drop: 0.15}\n"
    )
    line = next(line for line in show(db).splitlines() if line.startswith("Power: "))
    for figure in expected_lines(Thresholds(max_top1_drop=0.2, max_top3_drop=0.15)):
        assert figure in line
    assert "top-1 (threshold 20.0 pts): " in line and "top-3 (threshold 15.0 pts): " in line
    assert f"thresholds: {work / 'retrieval_eval.yaml'}" in line


def test_report_html_carries_the_power_line(stored: tuple[str, Path]) -> None:
    db, work = stored
    result = CliRunner().invoke(cli, ["runs", "report", "1", "--db", db, "-o", "r.html"])
    assert result.exit_code == 0, result.output
    page = (work / "r.html").read_text()
    assert '<p class="power">Power: ' in page
    for figure in expected_lines(Thresholds()):
        assert figure in page

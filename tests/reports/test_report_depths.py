"""Every report format and the leaderboard show every gated depth: ``depths: [1, 5]`` reports
top-1 and top-5 (not top-3), and a deeper depth adds columns after the seed's."""

from __future__ import annotations

import csv
import io
import json
import re

import pytest
from store.builders import as_stored, ranked_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.reports.html import render_html
from retrieval_eval.reports.leaderboard import render_leaderboard
from retrieval_eval.reports.report import render
from retrieval_eval.reports.verdict import verdict_document
from retrieval_eval.verdicts.regression import Verdict, detect_regression
from retrieval_eval.workflows.leaderboard import compare_runs

# ten questions: two found first, two second, four fifth (the ones that fall), two never
BEFORE = {"a0": 1, "a1": 1, "b0": 2, "b1": 2, "c0": 5, "c1": 5, "c2": 5, "c3": 5, "n0": None}
AFTER = {**BEFORE, "c0": 9, "c1": 9, "c2": 9, "c3": 9}


def _run(ranks: dict[str, int | None], depths: list[int], day: int = 0) -> RunResult:
    forms = {qid: "gap" for qid in ranks if qid[0] == "c"}
    return ranked_run(ranks, depths, day=day, forms=forms, retriever=f"r{day}")


@pytest.fixture(scope="module")
def judged() -> tuple[RunResult, Verdict]:
    current = _run(AFTER, [1, 5], day=1)
    baseline = as_stored(_run(BEFORE, [1, 5]), run_id=1)
    return current, detect_regression(current, baseline, Thresholds())


def test_text_report_and_verdict_show_top1_and_top5(judged: tuple[RunResult, Verdict]) -> None:
    current, verdict = judged
    text = render(current, "text", verdict=verdict)
    assert "Top-1 hit rate: 22.2% [6.3%, 54.7%] (2/9)" in text
    assert "Top-5 hit rate: 44.4%" in text and "Top-3 hit rate" not in text
    header = next(line for line in text.splitlines() if line.startswith("┃ form"))
    assert "top-1" in header and "top-5" in header and "top-3" not in header
    assert "  Top-5: 88.9% → 44.4% (-44.4 pts)" in text
    assert "  Top-5 flips: 4 hit→miss (c0, c1, c2, c3), 0 miss→hit; McNemar exact p = 0.125" in text
    assert "Regressed: top-5 -44.4 pts (max drop 10.0 pts)" in text


def test_markdown_headline_lists_every_depth(judged: tuple[RunResult, Verdict]) -> None:
    current, verdict = judged
    text = render(current, "markdown", {"run_id": 2}, verdict=verdict)
    assert "| top-5 | 44.4% (4/9) | [18.9%, 73.3%] | -44.4 pts |" in text
    assert "| top-3 |" not in text
    assert "| form | questions | top-1 | 95% CI | top-5 | 95% CI |" in text
    assert "| id | form | hard class | top-1 | top-5 | rank | latency | error |" in text
    assert (
        "Flipped questions: 0 at top-1 (0 hit→miss, 0 miss→hit; McNemar exact p = 1), "
        "4 at top-5 (4 hit→miss, 0 miss→hit; McNemar exact p = 0.125)" in text
    )


def test_json_report_summary_and_csv_carry_the_deep_depth(
    judged: tuple[RunResult, Verdict],
) -> None:
    current, verdict = judged
    full = json.loads(
        render(current, "json", {"regression": verdict_document(verdict)}, verdict=verdict)
    )
    assert full["depths"] == [1, 5] and full["top5_hits"] == 4
    assert full["regression"]["by_depth"]["5"]["dropped"] is True
    summary = json.loads(render(current, "json", {}, verdict=verdict, summary=True))
    assert summary["depths"] == [1, 5]
    assert summary["top5_delta"] == pytest.approx(-4 / 9) and summary["top5_baseline"] == 8 / 9
    assert summary["flips"]["top5_to_miss"] == 4 and summary["flips"]["top5_to_hit"] == 0
    rows = list(csv.DictReader(io.StringIO(render(current, "csv"))))
    assert list(rows[0])[-1] == "top5_hit"
    assert {r["id"]: r["top5_hit"] for r in rows}["c0"] == "0"


def test_html_report_charts_and_tables_every_depth(judged: tuple[RunResult, Verdict]) -> None:
    current, verdict = judged
    page = render_html(as_stored(current, run_id=2, verdict=verdict))
    assert "<title>all questions top-5: 44.4% [18.9%, 73.3%]</title>" in page
    assert "<th>top-5</th>" in page and "<th>top-3</th>" not in page
    assert "Top-5 flips: 4 hit→miss" in page


def test_the_leaderboard_adds_a_column_per_deeper_depth() -> None:
    deep = as_stored(_run(BEFORE, [1, 5]), run_id=1)
    seed = as_stored(_run(AFTER, [1, 3], day=1), run_id=2)
    board = compare_runs([deep, seed])
    assert board.deeper_depths() == [5]
    # the [1, 3] run fetched 12 ids: its top-5 is counted from its questions
    assert [e.hit_rate_at[5] for e in board.entries] == [pytest.approx(8 / 9), pytest.approx(4 / 9)]
    text = render_leaderboard(board, "text")
    assert re.findall(r"top-\d+ \[95% CI\]", text.splitlines()[1]) == [
        "top-1 [95% CI]", "top-3 [95% CI]", "top-5 [95% CI]",
    ]  # fmt: skip
    assert "88.9% [56.5%, 98.0%]" in text.splitlines()[2]
    rows = list(csv.DictReader(io.StringIO(render_leaderboard(board, "csv"))))
    assert list(rows[0])[-3:] == ["top5_hit_rate", "top5_ci_low", "top5_ci_high"]
    data = json.loads(render_leaderboard(board, "json"))
    assert data["entries"][1]["hit_rate_at"] == {"5": pytest.approx(4 / 9)}
    plain = json.loads(
        render_leaderboard(compare_runs([seed, as_stored(_run(BEFORE, [1, 3]))]), "json")
    )
    assert "hit_rate_at" not in plain["entries"][0]  # the seed's depths: the seed's document


def test_the_power_line_covers_every_gated_depth(judged: tuple[RunResult, Verdict]) -> None:
    from types import SimpleNamespace

    from retrieval_eval.lint.power import run_power
    from retrieval_eval.lint.render import power_summary

    current, _ = judged
    report = run_power(current, Thresholds.model_validate({"max_top5_drop": 0.05}))
    assert [(f.metric, f.threshold) for f in report.figures] == [("top1", 0.1), ("top5", 0.05)]
    assert report.figures[1].rate == pytest.approx(4 / 9)
    assert (
        "; top-5 (threshold 5.0 pts): at 9 questions no drop is seen, not even one to 0%; "
        "469 questions to see 5 pts"
    ) in power_summary(report)
    # `show` without a config passes the defaults by name: a deeper depth gets the default drop
    defaults = SimpleNamespace(max_top1_drop=0.1, max_top3_drop=0.1)
    assert run_power(current, defaults).figures[1].threshold == 0.10  # type: ignore[arg-type]

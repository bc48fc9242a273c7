"""Gated depths end to end through the CLI: a config gating ``[1, 5]`` (and ``[1, 3, 5, 10]``),
the same retriever run twice while six answers slip from rank 4-5 to rank 8. Only the depth-5
gate catches it; the run is stored and read back with every depth (``show``, ``history``,
``report --html``), and ``export-run`` keeps the five documents the run judged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.test_cli_core import invoke, isolate_env

# twenty questions: the rank of each one's target before (after: the "c" ones at rank 8)
RANKS = {
    **{f"a{i}": 1 for i in range(6)},
    **{f"b{i}": 2 for i in range(4)},
    **{f"c{i}": 4 + i % 2 for i in range(6)},
    **{f"n{i}": None for i in range(4)},
}
RETRIEVER = f"""
import os

RANKS = {RANKS!r}


def ranked(question, limit):
    qid = question.removeprefix("question ")
    rank = RANKS[qid]
    if rank is not None and qid.startswith("c") and os.environ.get("DEPTHS_PHASE") == "after":
        rank = 8
    ranking = [f"other-{{qid}}-{{i}}" for i in range(limit)]
    if rank is not None and rank <= limit:
        ranking[rank - 1] = f"doc-{{qid}}"
    return ranking
"""
SET = "identifier: depths.demo\nquestions:\n" + "".join(
    f"  - {{id: {qid}, question: question {qid}, form: {'gap' if qid < 'b' else 'match'}, "
    f"expected_document_ids: [doc-{qid}]}}\n"
    for qid in RANKS
)
NAME = "depth_retrievers:ranked"


def _workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, depths: str) -> Path:
    import sys

    work = tmp_path / "work"
    work.mkdir()
    (work / "depths.yaml").write_text(SET)
    (work / "depth_retrievers.py").write_text(RETRIEVER)
    (work / "retrieval_eval.yaml").write_text(f"sets: [depths.yaml]\nrun: {{depths: {depths}}}\n")
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "depth_retrievers", raising=False)
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.setenv("RETRIEVAL_EVAL_CONFIG", str(work / "retrieval_eval.yaml"))
    monkeypatch.delenv("DEPTHS_PHASE", raising=False)
    return work


def _run_twice(monkeypatch: pytest.MonkeyPatch, *extra: str) -> tuple[str, dict]:
    first = invoke("run", "depths.demo", NAME, "--summary")
    assert first.exit_code == 0, first.output
    assert first.stdout.startswith("BASELINE  depths.demo")
    monkeypatch.setenv("DEPTHS_PHASE", "after")
    second = invoke("run", "depths.demo", NAME, "--format", "json", *extra)
    assert second.exit_code == (1 if "--fail-on-regression" in extra else 0), second.output
    data = json.loads(second.stdout)
    return str(data["run_id"]), data


def test_depths_1_5_catch_a_drop_the_seed_depths_miss(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _workdir(tmp_path, monkeypatch, "[1, 5]")
    run_id, data = _run_twice(monkeypatch, "--fail-on-regression")
    verdict = data["regression"]
    assert verdict["state"] == "regression" and list(verdict["by_depth"]) == ["1", "5"]
    assert verdict["by_depth"]["5"]["dropped"] and not verdict["by_depth"]["1"]["dropped"]
    assert verdict["reasons"][0] == "top-5 -30.0 pts (max drop 10.0 pts)"
    assert (data["depths"], data["top5_hits"], data["settings"]["depths"]) == ([1, 5], 10, [1, 5])
    assert verdict["top1_delta"] == 0 and verdict["top3_delta"] == 0
    # the same run gated at the seed's depths (top-3 unchanged): no regression
    seed = invoke("run", "depths.demo", NAME, "--depths", "1,3", "--no-save", "--summary")
    assert seed.exit_code == 0 and seed.stdout.startswith("NO REGRESSION"), seed.output
    # a top-5 threshold above the drop (its form slice fell 42.9 pts) lets it through; one for a depth not gated is refused
    loose = invoke("run", "depths.demo", NAME, "--max-drop", "5=0.45", "--no-save", "--summary")
    assert loose.stdout.startswith("NO REGRESSION"), loose.output
    ungated = invoke("run", "depths.demo", NAME, "--max-drop", "7=0.1", "--no-save")
    assert ungated.exit_code == 2 and "depth 7, which this run does not gate" in ungated.stderr

    # stored and read back: show, history, the HTML report
    shown = invoke("runs", "show", run_id)
    assert shown.exit_code == 0, shown.output
    assert "Top-5 hit rate: 50.0%" in shown.stdout and "Top-3 hit rate" not in shown.stdout
    assert "  Top-5: 80.0% → 50.0% (-30.0 pts)" in shown.stdout
    stored = json.loads(invoke("runs", "show", run_id, "--format", "json").stdout)
    assert stored["top5_hits"] == 10 and stored["regression"]["by_depth"]["5"]["dropped"]
    history = invoke("runs", "list", "depths.demo", NAME)
    assert "top-5" in history.stdout.splitlines()[2] and "top-3" not in history.stdout
    listed = json.loads(invoke("runs", "list", "depths.demo", NAME, "--format", "json").stdout)
    assert [r["top5_hit_rate"] for r in listed] == [0.5, 0.8]
    page = invoke("runs", "report", run_id, "-o", "-").stdout
    assert "<th>top-5</th>" in page and "Top-5 flips: 6 hit→miss" in page

    # export-run keeps the five distinct documents the run judged
    exported = invoke("runs", "export", run_id)
    assert exported.exit_code == 0, exported.output
    lines = exported.stdout.splitlines()
    assert len(lines) == 20 * 5 and "100 run lines (to depth 5)" in exported.stderr
    assert [line.split()[3] for line in lines[:5]] == ["1", "2", "3", "4", "5"]


def test_depths_1_3_5_10_gate_each_on_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = _workdir(tmp_path, monkeypatch, "[1, 3, 5, 10]")
    config = work / "retrieval_eval.yaml"
    config.write_text(config.read_text() + "thresholds: {max_top10_drop: 0.0}\n")
    run_id, data = _run_twice(monkeypatch)
    by_depth = data["regression"]["by_depth"]
    assert [by_depth[d]["dropped"] for d in ("1", "3", "5", "10")] == [False, False, True, False]
    assert by_depth["10"]["max_drop"] == 0.0 and by_depth["10"]["delta"] == 0  # rank 8 ≤ 10
    assert by_depth["5"]["flipped_to_miss"] == [f"c{i}" for i in range(6)]
    holm = [by_depth[d]["p_holm"] for d in ("1", "3", "5", "10")]
    assert holm[2] == pytest.approx(min(1.0, 4 * by_depth["5"]["p_value"]))
    assert data["settings"]["depths"] == [1, 3, 5, 10]
    text = invoke("runs", "show", run_id).stdout
    for depth in (1, 3, 5, 10):
        assert f"Top-{depth} hit rate:" in text and f"  Top-{depth} flips:" in text
    exported = invoke("runs", "export", run_id)
    assert len(exported.stdout.splitlines()) == 20 * 10

"""``history`` lists a pair's stored runs, newest first, in text and JSON."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from store.builders import hits, make_run, question

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import Verdict

REGRESSION = Verdict(
    state="regression",
    baseline_run_id=1,
    top1_delta=-0.25,
    is_regression=True,
    flipped_to_miss=["q000"],
    summary="worse",
)
PAIRS = [("demo.set", "bm25"), ("demo.set", "dense"), ("other.set", "bm25")]


def _fill(path: Path) -> None:
    with open_store(f"sqlite:///{path}") as store:
        store.runs.save(make_run(hits(3, 4, form="gap", hard_class="paraphrase"), day=0))
        regressed = store.runs.save(
            make_run(
                [*hits(1, 2), question("e1", False, error="TimeoutError", latency_ms=None)],
                day=1,
                max_error_rate=1.0,
                corpus_revision="rev-2",
            ),
            REGRESSION,
        )
        store.runs.save(make_run(hits(0, 3, error="boom"), day=2))  # invalid
        store.runs.save(make_run(hits(2, 3), day=2))  # same day: the id orders them
        store.runs.save(make_run(hits(1, 1), retriever="dense", day=3))
        store.runs.save(make_run(hits(1, 1), set_identifier="other.set", day=3))
        store.runs.accept_baseline(regressed)


def test_history_lists_the_stored_runs_newest_first(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    _fill(path)
    url = f"sqlite:///{path}"
    runner = CliRunner()
    args = ["runs", "list", "demo.set", "bm25", "--db", url]
    text = runner.invoke(cli, args)
    data = runner.invoke(cli, [*args, "--format", "json"])
    assert text.exit_code == 0, text.output
    assert data.exit_code == 0, data.output
    assert "regression (accepted)" in text.output and "(invalid)" in text.output
    listed = json.loads(data.output)
    assert [run["id"] for run in listed] == [4, 3, 2, 1]
    assert listed[2]["verdict_state"] == "regression" and listed[2]["accepted_baseline"]
    assert listed[1]["status"] == "invalid" and listed[1]["baseline_run_id"] is None

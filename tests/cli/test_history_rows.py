"""``history`` from a SQLite store lists from rows: the same summaries as from stored runs."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner
from store.builders import hits, make_run, question

from retrieval_eval.cli import cli
from retrieval_eval.cli.history_cmd import _row_summary, _summary
from retrieval_eval.judging.regression import Verdict
from retrieval_eval.store import open_store
from retrieval_eval.store.reader import open_reader

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
        store.save(make_run(hits(3, 4, form="gap", hard_class="paraphrase"), day=0))
        regressed = store.save(
            make_run(
                [*hits(1, 2), question("e1", False, error="TimeoutError", latency_ms=None)],
                day=1,
                max_error_rate=1.0,
                corpus_revision="rev-2",
            ),
            REGRESSION,
        )
        store.save(make_run(hits(0, 3, error="boom"), day=2))  # invalid
        store.save(make_run(hits(2, 3), day=2))  # same day: the id orders them
        store.save(make_run(hits(1, 1), retriever="dense", day=3))
        store.save(make_run(hits(1, 1), set_identifier="other.set", day=3))
        store.accept_baseline(regressed)


def test_rows_summarise_as_stored_runs_do(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    _fill(path)
    reader = open_reader(path)
    assert reader is not None
    with reader, open_store(f"sqlite:///{path}") as store:
        for set_identifier, retriever in PAIRS:
            for limit in (1, 3, 50):
                rows = reader.history_rows(set_identifier, retriever, limit)
                from_rows = [_row_summary(row) for row in rows]
                runs = store.history(set_identifier, retriever, limit=limit, questions=False)
                from_runs = [_summary(run) for run in runs]
                assert from_rows == from_runs
                assert json.dumps(from_rows) == json.dumps(from_runs)  # types too (1 vs 1.0)


def test_history_text_and_json_are_the_same_from_either_store(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    _fill(path)
    url = f"sqlite:///{path}"
    runner = CliRunner()
    outputs = []
    for reader in (True, False):
        args = ["history", "demo.set", "bm25", "--db", url]
        if not reader:  # the Store's path: what _open_to_read does for a non-SQLite store
            from retrieval_eval.cli import history_cmd

            original = history_cmd._open_to_read
            history_cmd._open_to_read = lambda db, config_path: open_store(url)  # type: ignore[assignment]
        try:
            text = runner.invoke(cli, args)
            data = runner.invoke(cli, [*args, "--format", "json"])
        finally:
            if not reader:
                history_cmd._open_to_read = original  # type: ignore[method-assign]
        assert text.exit_code == 0, text.output
        assert data.exit_code == 0, data.output
        outputs.append((text.output, data.output))
    assert outputs[0] == outputs[1]
    assert "regression (accepted)" in outputs[0][0] and "(invalid)" in outputs[0][0]

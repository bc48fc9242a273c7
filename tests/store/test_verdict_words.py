"""A verdict is stored as data (state, codes, figures) and worded when read; a row an older
version wrote, with the verdict's sentences in it and none of the codes, reads and renders with
the sentences it was stored with."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.config.models import Thresholds
from retrieval_eval.reports.verdict import (
    regression_reasons,
    render_verdict,
    verdict_document,
    verdict_summary,
)
from retrieval_eval.store import open_store
from retrieval_eval.workflows.recording import record_run
from store.builders import hits, make_run

OLD_SUMMARY = "Regression against run 1: top-1 -40.0 pts (max drop 5.0 pts); as worded in 2025."
OLD_REASON = "top-1 -40.0 pts (max drop 5.0 pts)"
# the keys a verdict stored as data adds; a row written before them has none
NEW_KEYS = ("cause", "severity", "max_latency_p95_increase", "not_saved", "labels_attention")


def _stored_verdict(path: Path, run_id: int) -> dict:
    with sqlite3.connect(path) as connection:
        (details,) = connection.execute(
            "SELECT details FROM eval_result WHERE id = ?", (run_id,)
        ).fetchone()
    return json.loads(details)["verdict"]


def _regressed(path: Path) -> int:
    url = f"sqlite:///{path}"
    thresholds = Thresholds(max_top1_drop=0.05, max_top3_drop=0.05)
    record_run(make_run(hits(10, 10)), store_url=url, thresholds=thresholds)
    recorded = record_run(make_run(hits(6, 10), day=1), store_url=url, thresholds=thresholds)
    assert recorded.verdict.state == "regression" and recorded.run_id is not None
    return recorded.run_id


def test_the_store_keeps_codes_and_figures_and_no_sentence(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    run_id = _regressed(path)
    stored = _stored_verdict(path, run_id)
    assert stored["summary"] == "" and stored["reasons"] == [] and stored["warnings"] == []
    assert stored["severity"] == "error" and stored["by_depth"]["1"]["dropped"] is True
    with open_store(f"sqlite:///{path}") as store:
        verdict = store.get_run(run_id).verdict
    assert verdict is not None
    assert regression_reasons(verdict) == [
        "top-1 -40.0 pts (max drop 5.0 pts)",
        "top-3 -40.0 pts (max drop 5.0 pts)",
    ]
    assert verdict_summary(verdict).startswith("Regression against run 1: top-1 -40.0 pts")
    # the JSON contract words it, and carries none of the fields it is worded from
    document = verdict_document(verdict)
    assert document["reasons"] == regression_reasons(verdict)
    assert document["summary"] == verdict_summary(verdict)
    assert not set(NEW_KEYS) & set(document)


def test_a_row_written_the_old_way_reads_and_renders_its_sentences(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    run_id = _regressed(path)
    # rewrite the row as an older version stored it: sentences in, codes out
    with sqlite3.connect(path) as connection:
        (details,) = connection.execute(
            "SELECT details FROM eval_result WHERE id = ?", (run_id,)
        ).fetchone()
        document = json.loads(details)
        old = {k: v for k, v in document["verdict"].items() if k not in NEW_KEYS}
        old.update(summary=OLD_SUMMARY, reasons=[OLD_REASON], warnings=[])
        document["verdict"] = old
        connection.execute(
            "UPDATE eval_result SET details = ? WHERE id = ?", (json.dumps(document), run_id)
        )
    with open_store(f"sqlite:///{path}") as store:
        verdict = store.get_run(run_id).verdict
    assert verdict is not None and verdict.worded_when_decided
    assert verdict_summary(verdict) == OLD_SUMMARY
    assert regression_reasons(verdict) == [OLD_REASON]
    assert f"Regressed: {OLD_REASON}" in render_verdict(verdict)
    db = f"sqlite:///{path}"
    shown = CliRunner().invoke(cli, ["runs", "show", str(run_id), "--db", db, "--format", "json"])
    assert shown.exit_code == 0, shown.output
    regression = json.loads(shown.output)["regression"]
    assert regression["summary"] == OLD_SUMMARY and regression["reasons"] == [OLD_REASON]


def test_a_first_run_not_saved_is_a_flag_worded_by_reports(tmp_path: Path) -> None:
    from retrieval_eval.workflows.labelled_run import record_verdict

    recorded = record_verdict(
        make_run(hits(3, 3)),
        Thresholds(),
        store_url=f"sqlite:///{tmp_path / 'r.sqlite'}",
        save=False,
    )
    assert recorded.verdict.state == "baseline" and recorded.verdict.not_saved
    assert verdict_summary(recorded.verdict).endswith(
        "it would be the baseline, but it is not saved."
    )

"""An invalid run stored before "invalid runs name no baseline" still carries a baseline id in its
row and verdict; every read ignores it (the Store, ``history --format json``, the dashboard's
summaries), while a compared run keeps naming its baseline."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.store import open_store
from retrieval_eval.verdicts.regression import Verdict
from store.builders import hits, make_run


def _fill(path: Path) -> dict[str, int]:
    with open_store(f"sqlite:///{path}") as store:
        base = store.runs.save(make_run(hits(3, 3), day=0))
        compared = store.runs.save(
            make_run(hits(3, 3), day=1),
            Verdict(state="no_regression", baseline_run_id=base, summary="fine"),
        )
        # written the old way: an invalid run's verdict (and so its row) naming a baseline
        old = Verdict(state="invalid_run", baseline_run_id=base, summary="Run invalid")
        invalid = store.runs.save(make_run(hits(0, 3, error="boom"), day=2), old)
    return {"base": base, "compared": compared, "invalid": invalid}


def test_the_row_really_carries_the_old_baseline_id(tmp_path: Path) -> None:
    import sqlite3

    path = tmp_path / "results.sqlite"
    ids = _fill(path)
    with sqlite3.connect(path) as connection:
        (stored,) = connection.execute(
            "SELECT baseline_run_id FROM eval_result WHERE id = ?", (ids["invalid"],)
        ).fetchone()
    assert stored == ids["base"]


def test_the_store_reads_no_baseline_for_the_invalid_run(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ids = _fill(path)
    with open_store(f"sqlite:///{path}") as store:
        invalid = store.get_run(ids["invalid"])
        assert invalid.status == "invalid" and invalid.baseline_run_id is None
        assert invalid.verdict is not None and invalid.verdict.baseline_run_id is None
        compared = store.get_run(ids["compared"])
        assert compared.baseline_run_id == ids["base"]
        assert compared.verdict is not None and compared.verdict.baseline_run_id == ids["base"]
        by_id = {run.run_id: run for run in store.runs.summaries("demo.set", "bm25", 10)}
    assert by_id[ids["invalid"]].baseline_run_id is None
    assert by_id[ids["compared"]].baseline_run_id == ids["base"]


def test_history_json_names_no_baseline_for_the_invalid_run(tmp_path: Path) -> None:
    path = tmp_path / "results.sqlite"
    ids = _fill(path)
    url = f"sqlite:///{path}"
    out = CliRunner().invoke(
        cli, ["runs", "list", "demo.set", "bm25", "--db", url, "--format", "json"]
    )
    assert out.exit_code == 0, out.output
    by_id = {run["id"]: run for run in json.loads(out.output)}
    assert by_id[ids["invalid"]]["status"] == "invalid"
    assert by_id[ids["invalid"]]["baseline_run_id"] is None
    assert by_id[ids["compared"]]["baseline_run_id"] == ids["base"]

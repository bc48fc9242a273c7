"""The run page and /api/runs/{id} show the smallest drop the run's set size detects, next to
the thresholds (the defaults here: no config is found)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.lint.power import detectable_drop
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app


def test_the_run_page_shows_the_detectable_drop_by_the_thresholds(
    filled_sqlite, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)  # no retrieval_eval.yaml here: default thresholds
    run_id = filled_sqlite.regression_ids[0]
    with open_store(filled_sqlite.url) as store:
        result = store.get_run(run_id).result
    app = create_app(filled_sqlite.url, require_auth=False)
    with TestClient(app) as client:
        power = client.get(f"/api/runs/{run_id}").json()["power"]
        html = client.get(f"/runs/{run_id}").text
    app.state.store_source.close()
    top1 = next(f for f in power["figures"] if f["metric"] == "top1")
    expected = detectable_drop(result.question_count, rate=result.top1_hit_rate)
    assert top1["questions"] == result.question_count
    assert top1["threshold"] == 0.10
    assert top1["detectable_drop"] == pytest.approx(expected)
    n = result.question_count
    shown = (
        f"top-1 (threshold 10.0 pts): at {n} questions no drop is seen, not even one to 0%"
        if expected is None
        else f"top-1 (threshold 10.0 pts): at {n} questions a drop needs ≥ {expected * 100:.1f} pts"
    )
    assert shown in html
    assert 'id="power"' in html

"""Judged slices at a depth other than 1 and 3: a pair gating ``[1, 5]`` whose index lost the
only target of two gap questions that the baseline found at rank 4 (hits at top-5, not at
top-3). The run page and its JSON twin show each slice's top-5 rate as the verdict judged it,
with the stale questions left out of this run's rates and the baseline's, from a real SQLite
store filled by ``record_run``."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fastapi.testclient import TestClient
from store.builders import ranked_run

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.reports.verdict import verdict_summary
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import record_run

DEPTHS = [1, 5]
GAP = ["g0", "g1", "g2", "g3"]
BEFORE = {"g0": 4, "g1": 4, "g2": 4, "g3": 5, "m0": 1, "m1": 1, "m2": 2, "m3": 5, "m4": None}
STALE = ["g0", "g1"]  # every target gone after the rebuild
AFTER = {**BEFORE, **dict.fromkeys(STALE)}
FORMS = dict.fromkeys(GAP, "gap")
CLASSES = {"g0": "numeric", "g2": "numeric", "m0": "numeric"}


@dataclass
class Judged:
    client: TestClient
    run_id: int


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Judged]:
    url = f"sqlite:///{tmp_path_factory.mktemp('judged_depths') / 'results.sqlite'}"
    shape = {"forms": FORMS, "classes": CLASSES}
    record_run(ranked_run(BEFORE, DEPTHS, **shape), store_url=url, thresholds=Thresholds())
    dead = DeadLabels(
        checked=True,
        source="lexical corpus",
        dead_ids=[f"doc-{q}" for q in STALE],
        stale_questions=STALE,
    )
    rebuilt = ranked_run(AFTER, DEPTHS, day=1, **shape).model_copy(update={"dead_labels": dead})
    recorded = record_run(rebuilt, store_url=url, thresholds=Thresholds())
    # two of nine lost at top-5 (22 points), all of it stale: the verdict leaves them out
    assert recorded.verdict.stale_questions == STALE
    assert recorded.verdict.state == "no_regression", verdict_summary(recorded.verdict)
    app = create_app(url, require_auth=False)
    with TestClient(app) as client:
        assert recorded.run_id is not None
        yield Judged(client, recorded.run_id)
    app.state.store_source.close()


def test_the_json_judges_each_slice_at_top_5_without_the_stale_questions(judged: Judged) -> None:
    data = judged.client.get(f"/api/runs/{judged.run_id}").json()
    slices = data["judged_slices"]
    assert slices["left_out"] == STALE and slices["questions"] == len(BEFORE) - len(STALE)
    gap, base = slices["by_form"]["gap"], slices["baseline_by_form"]["gap"]
    # g2 and g3 are left, both within rank 5: this run's and the baseline's top-5 are 2 of 2
    assert gap["questions"] == base["questions"] == 2
    assert gap["hits_at"] == base["hits_at"] == {"1": 0, "5": 2}
    numeric = slices["by_hard_class"]["numeric"]  # g0 left out; g2 (rank 4) and m0 (rank 1)
    assert numeric["questions"] == 2 and numeric["hits_at"] == {"1": 1, "5": 2}
    assert slices["stale_by_form"] == {"gap": 2} and slices["stale_by_hard_class"] == {"numeric": 1}
    # the run's own gap slice still counts the stale pair as misses: 2 of 4 at top-5
    assert data["run"]["by_form"]["gap"]["hits_at"] == {"1": 0, "5": 2}
    assert data["run"]["by_form"]["gap"]["questions"] == 4


def test_the_run_page_shows_the_judged_top_5_rates(judged: Judged) -> None:
    html = judged.client.get(f"/runs/{judged.run_id}").text
    row = re.search(r'<tr data-dimension="by_form" data-value="gap">(.*?)</tr>', html, re.S)
    assert row is not None
    cells = {
        label: re.sub(r"<[^>]+>", "", text).strip()
        for label, text in re.findall(
            r'<td data-label="([^"]*)"[^>]*>(.*?)</td>', row.group(1), re.S
        )
    }
    assert cells["Questions"] == "2" and cells["Stale, left out"] == "2"
    assert cells["Top-5"].startswith("100.0% [") and cells["Baseline top-5"].startswith("100.0% [")
    assert cells["Top-1"].startswith("0.0% [")
    assert "Top-3" not in cells and "Baseline top-3" not in cells  # not a gated depth
    assert "over 7 of 9 questions, the 2 stale questions" in html

"""The round trip: pool -> judgments filled in -> sets promote -> sets rejudge -> history that
compares like with like across the label change (SQLite; the store part on PostgreSQL too).

The retriever finds, for three questions, a second page that answers them but was never
labelled ("alt-"), and puts it first. Under the first labels that is a regression; once the
pooled judgments label those pages and the set is promoted, the re-judged runs say it was not,
and the next run is compared with a re-judged run instead of starting over.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from fastapi.testclient import TestClient
from store.builders import pg_schema

from retrieval_eval import FunctionRetriever, evaluate, load_golden_set
from retrieval_eval.cli import cli
from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.labels.judgments import read_judgments, write_judgments
from retrieval_eval.labels.pooling import pool
from retrieval_eval.store import open_store
from retrieval_eval.webui.app import create_app
from retrieval_eval.workflows.recording import judge_and_save

IDS = [f"q{i}" for i in range(8)]


def _set_file(folder: Path) -> Path:
    path = folder / "tiny.yaml"
    questions = [
        {
            "id": q,
            "question": f"what is {q}?",
            "form": "match",
            "expected_document_ids": [f"doc-{q}"],
        }
        for q in IDS
    ]
    path.write_text(yaml.safe_dump({"identifier": "tiny", "questions": questions}))
    return path


def _retriever(alt: bool) -> FunctionRetriever:
    """Ranks each question's page first; with ``alt``, q0-q2's unlabelled second page first
    and their labelled page fourth (outside the top 3)."""

    def search(question: str, limit: int) -> list[str]:
        qid = question.removeprefix("what is ").removesuffix("?")
        if alt and qid in ("q0", "q1", "q2"):
            return [f"alt-{qid}", "noise-1", "noise-2", f"doc-{qid}"][:limit]
        return [f"doc-{qid}", "noise-1", "noise-2"][:limit]

    return FunctionRetriever(search, identifier="bm25")


def _invoke(config: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, [*args, "--config", str(config)], catch_exceptions=False)


def _round_trip(tmp_path: Path, store_url: str) -> None:
    set_file = _set_file(tmp_path)
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({"sets": [set_file.name], "store": store_url}))
    v1 = load_golden_set(set_file)
    settings = RunSettings()
    with open_store(store_url) as store:
        first = judge_and_save(store, evaluate(v1, _retriever(False), settings), Thresholds())
        second = judge_and_save(store, evaluate(v1, _retriever(True), settings), Thresholds())
        assert second.verdict.state == "regression"  # the unlabelled pages cost 3 of 8 at top-1
        stored = store.get_run(second.run_id)
    # pool the stored run's top 3, fill the grades as a rater would, and promote
    rankings = {"bm25": {q.id: q.retrieved for q in stored.result.questions}}
    pooled = pool(v1, rankings, depth=3).rows(v1)
    assert {(r.question_id, r.document_id) for r in pooled} >= {("q0", "alt-q0"), ("q1", "noise-1")}
    filled = [
        r.model_copy(update={"grade": 2 if r.document_id.startswith("alt-") else 0, "rater": "ann"})
        for r in pooled
    ]
    judgments = tmp_path / "judgments.csv"
    write_judgments(filled, judgments)
    assert read_judgments(judgments) == filled

    promoted = _invoke(config, "sets", "promote", "tiny", "--judgments", str(judgments))
    assert promoted.exit_code == 0, promoted.output
    v2 = load_golden_set(set_file)
    assert v2.version == 2 and v2.fingerprint != v1.fingerprint
    (entry,) = v2.changelog
    assert entry.raters == ("ann",) and len(entry.added) == 3 and not entry.removed
    q0 = next(q for q in v2.questions if q.id == "q0")
    assert q0.expected_document_ids == ("doc-q0", "alt-q0")
    # the pages graded 0 stay judged in the set: no pool offers them again
    assert q0.grades == {"alt-q0": 2, "noise-1": 0, "noise-2": 0}
    assert not pool(v2, rankings, depth=3).rows(v2)

    rejudged = _invoke(config, "sets", "rejudge", "tiny", "--format", "json")
    assert rejudged.exit_code == 0, rejudged.output
    runs = json.loads(rejudged.output)["runs"]
    assert [(r["run_id"], r["outcome"]) for r in runs] == [
        (first.run_id, "rejudged"),
        (second.run_id, "rejudged"),
    ]
    twin1, twin2 = (r["rejudged_id"] for r in runs)
    # like with like: the second run, judged against the labels that know the alt pages,
    # compares with the first run re-judged, and is no regression
    assert runs[0]["verdict_state"] == "baseline"
    assert (runs[1]["verdict_state"], runs[1]["baseline_run_id"]) == ("no_regression", twin1)
    assert runs[0]["shortfall"] == "not recomputed: mrr"  # 1/rank reads the whole fetch
    again = _invoke(config, "sets", "rejudge", "tiny", "--format", "json")
    assert [r["outcome"] for r in json.loads(again.output)["runs"]] == ["already", "already"]

    with open_store(store_url) as store:
        third = judge_and_save(store, evaluate(v2, _retriever(True), settings), Thresholds())
        # compared with the re-judged second run (same labels), not started over
        assert (third.verdict.state, third.verdict.baseline_run_id) == ("no_regression", twin2)
        twin = store.get_run(twin2)
        assert twin.result.rejudged is not None
        assert twin.result.rejudged.from_run_id == second.run_id
        assert twin.result.set_version == 2 and twin.run_date == stored.run_date

    history = _invoke(config, "runs", "list", "tiny", "bm25", "--format", "json")
    listed = json.loads(history.output)
    # the originals judged against the old labels are shown re-judged: like with like
    assert [r["id"] for r in listed] == [third.run_id, twin2, twin1]
    assert [r["rejudged_from"] for r in listed] == [None, second.run_id, first.run_id]
    assert [r["set_version"] for r in listed] == [2, 2, 2]
    text = _invoke(config, "runs", "list", "tiny", "bm25")
    assert "re-judged from run" in text.output and "labels changed" in text.output
    assert f"labels changed between run {second.run_id} and run {third.run_id}" in text.output
    stored_rows = _invoke(config, "runs", "list", "tiny", "bm25", "--as-stored", "--format", "json")
    assert len(json.loads(stored_rows.output)) == 5

    # the dashboard shows the same runs, the re-judged ones marked, and a line where labels changed
    app = create_app(store_url, require_auth=False)
    try:
        with TestClient(app) as client:
            query = {"set": "tiny", "retriever": "bm25"}
            data = client.get("/api/history", params=query).json()
            assert [r["run_id"] for r in data["runs"]] == [twin1, twin2, third.run_id]
            assert data["label_changes"] == [third.run_id]
            page = client.get("/history", params=query).text
            assert page.count('class="mark-label-change"') >= 1
            assert f"re-judged from #{second.run_id}" in page
    finally:
        app.state.store_source.close()


def test_round_trip_on_sqlite(tmp_path: Path) -> None:
    _round_trip(tmp_path, f"sqlite:///{tmp_path / 'results.sqlite'}")


@pytest.mark.postgres
def test_round_trip_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    with pg_schema(pg_url) as url:
        _round_trip(tmp_path, url)

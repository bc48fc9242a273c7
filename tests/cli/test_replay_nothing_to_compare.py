"""A replay with nothing to compare (an empty query log; no query ranked by both replays) is
``empty``, "NOTHING TO COMPARE", exit 2 naming the log and the fix: never ``no_drift``. It is
stored (nothing computed is lost) but never becomes the replay the next one is compared with."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.replay_configs import CORPUS, LOG, invoke, write_config
from retrieval_eval.replay.compare import Ranked, compare
from retrieval_eval.replay.specs import DriftThresholds


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "queries.jsonl"
    log.write_text("")
    return write_config(
        tmp_path,
        monkeypatch,
        {
            "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
            "retrievers": {"bm25": {"type": "lexical", "corpus": CORPUS}},
            "samples": {"traffic": {"source": {"path": str(log)}}},
        },
    )


def test_an_empty_query_log_says_nothing_to_compare_and_exits_2(config: Path) -> None:
    log = config.parent / "queries.jsonl"
    for _ in range(2):  # the first replay, then one with a replay before it
        done = invoke(config, "replay", "traffic", "bm25", "--format", "json")
        assert done.exit_code == 2, done.output
        document = json.loads(done.output[: done.output.rindex("}") + 1])
        assert document["state"] == "empty" and document["queries"] == 0
        assert document["reasons"] == [
            "the sample holds no queries (is the query log empty?): nothing to compare"
        ]
        assert f"error: sample traffic ({log}): the sample holds no queries" in done.output
        assert "`retrieval-eval samples build traffic --refresh`" in done.output
    text = invoke(config, "replay", "traffic", "bm25")
    assert text.output.startswith("NOTHING TO COMPARE: sample traffic (0 queries)")
    assert "NO DRIFT" not in text.output
    drift = invoke(config, "drift", "traffic", "bm25").output.splitlines()
    assert [line.split()[3] for line in drift] == ["empty"] * 3  # stored, each of them
    # the log fills up: the sample drawn again replays as the first of its series
    log.write_text(Path(LOG).read_text())
    assert invoke(config, "samples", "build", "traffic", "--refresh").exit_code == 0
    filled = invoke(config, "replay", "traffic", "bm25", "--format", "json")
    assert filled.exit_code == 0, filled.output
    assert json.loads(filled.output)["state"] == "first"
    again = json.loads(invoke(config, "replay", "traffic", "bm25", "--format", "json").output)
    assert again["state"] == "no_drift" and again["compared_replay_id"] == 4


def test_no_query_ranked_by_both_replays_is_nothing_to_compare() -> None:
    """Every query is "not in the replay compared with": with errors allowed, none is left."""
    before = [Ranked("a", "a", 1, "head", ("d1",), None)]
    after = [Ranked("b", "b", 1, "head", ("d1",), None)]
    outcome = compare(before, after, thresholds=DriftThresholds(max_error_rate=1.0))
    assert outcome.state == "empty"
    assert outcome.reasons == ("no query was ranked by both replays: nothing to compare",)
    same = compare(before, before, thresholds=DriftThresholds(max_error_rate=1.0))
    assert same.state == "no_drift"


def test_a_dag_run_with_nothing_to_compare_takes_the_invalid_replay_branch() -> None:
    from retrieval_eval.airflow.branching import (
        BRANCH_INVALID_REPLAY,
        BRANCH_NO_DRIFT,
        drift_branch,
    )

    assert drift_branch("empty") == BRANCH_INVALID_REPLAY
    assert drift_branch("no_drift") == BRANCH_NO_DRIFT

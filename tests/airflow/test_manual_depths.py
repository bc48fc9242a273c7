"""A manual run's Params override the gated depths and the per-depth thresholds, checked before
any retrieval: ``runtime.manual_overrides`` on its own, then real ``dag.test()`` runs of the demo
DAG in one plan (a good override stored at its depths and threshold; bad ones failing
the load task, no ``retrieve`` task run, the log naming the Param and the fix)."""

from __future__ import annotations

from typing import Any

import pytest
from dag_helpers import run_plan, write_config

from retrieval_eval.airflow.runtime import manual_overrides
from retrieval_eval.errors import InvalidInputError

DAG_ID = "retrieval_eval__handbook_demo__handbook_bm25"


def test_params_become_the_pipelines_overrides() -> None:
    given = manual_overrides(
        {"depths": [1, 5], "max_drops": {"5": 0.02}, "max_top1_drop": 0.2, "relevance_level": 2}
    )
    assert given == {
        "run": {"depths": [1, 5], "relevance_level": 2},
        "thresholds": {"max_top1_drop": 0.2, "max_top3_drop": None, "max_top5_drop": 0.02},
    }
    assert manual_overrides({}) == {
        "run": {"depths": None, "relevance_level": None},
        "thresholds": {"max_top1_drop": None, "max_top3_drop": None},
    }


@pytest.mark.parametrize(
    ("params", "said"),
    [
        ({"depths": [5, 1]}, "Param depths: depths must be in increasing order: write [1, 5]"),
        ({"depths": [0, 5]}, "Param depths: depth 0 is not a whole number from 1 to 100"),
        ({"depths": "1,5"}, "Param depths: expected a list of depths such as [1, 5]"),
        ({"max_drops": {"five": 0.1}}, "Param max_drops: 'five' is not a depth"),
        ({"max_drops": {"5": 1.5}}, "Param max_drops: depth 5's drop must be between 0 and 1"),
        ({"max_drops": [0.1]}, "Param max_drops: expected a mapping of depth to drop"),
        ({"relevance_level": 4}, "Param relevance_level: expected 1, 2 or 3"),
        ({"relevance_level": True}, "Param relevance_level: expected 1, 2 or 3"),
        (
            {"max_drops": {"1": 0.3}, "max_top1_drop": 0.2},
            "Param max_drops gives depth 1 0.3 and Param max_top1_drop gives 0.2; give it once",
        ),
    ],
)
def test_a_bad_param_is_named_with_the_fix(params: dict[str, Any], said: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        manual_overrides(params)
    assert said in str(raised.value)


@pytest.fixture(scope="module")
def runs(airflow_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("manual_depths")
    store = f"sqlite:///{folder / 'results.sqlite'}"
    config = write_config(folder / "c.yaml", store=store, retriever="handbook_bm25")
    env = {"RETRIEVAL_EVAL_CONFIG": str(config)}
    good = {"depths": [1, 5], "max_drops": {"5": 0.02}}
    plan = [
        {"dag_id": DAG_ID, "env": env, "conf": good},
        {"dag_id": DAG_ID, "conf": good},  # compared with the first: the verdict's thresholds
        {"dag_id": DAG_ID, "conf": {"depths": [5, 1]}},
        {"dag_id": DAG_ID, "conf": {"max_drops": {"5": 0.05}}},  # 5 is not gated: [1, 3]
    ]
    outcomes, log = run_plan(airflow_env, plan, folder)
    assert len(outcomes) == 4, log[-3000:]
    from retrieval_eval.store import open_store

    with open_store(store) as opened:
        stored = opened.history("handbook.demo", "handbook_bm25")
    return {"outcomes": outcomes, "log": log, "stored": stored}


@pytest.mark.airflow
def test_a_manual_run_gates_the_depths_its_params_give(runs: dict[str, Any]) -> None:
    for good in runs["outcomes"][:2]:
        assert good["state"] == "success", runs["log"][-3000:]
    run, first = runs["stored"]  # newest first; the failed runs stored nothing
    assert first.result.depths == run.result.depths == [1, 5] and set(run.result.hits_at) == {1, 5}
    assert run.verdict is not None and run.verdict.state == "no_regression"
    assert run.verdict.by_depth[5].max_drop == pytest.approx(0.02)
    assert run.verdict.by_depth[1].max_drop == pytest.approx(0.10)  # the config's
    assert max(len(q.retrieved) for q in run.result.questions) > 3  # fetched for top-5


@pytest.mark.airflow
def test_a_bad_param_fails_the_run_before_any_retrieval(runs: dict[str, Any]) -> None:
    for outcome in runs["outcomes"][2:]:
        assert outcome["state"] == "failed"
        assert outcome["tasks"]["load_golden_set"] == "failed"
        retrieved = [
            state for task, state in outcome["tasks"].items() if task.startswith("retrieve")
        ]
        assert all(state != "success" for state in retrieved), outcome["tasks"]
    assert (
        "Param depths: depths must be in increasing order: write [1, 5], not [5, 1]" in runs["log"]
    )
    assert "a max drop was given for depth 5, which this run does not gate" in runs["log"]

"""The power figure over an evaluation's stored runs: at each gated depth, with the churn
measured between its runs (not assumed) and the newest run's rates, and the report saying
which it used. Three real runs of a retriever, evaluated at depths ``[1, 5]`` and saved in a
real SQLite store, read back read-only by ``run_lint``."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from lint.sets import golden, question
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.lint import run_lint
from retrieval_eval.lint.power import detectable_drop
from retrieval_eval.lint.render import RENDERERS
from retrieval_eval.retrievers.base import FunctionRetriever
from retrieval_eval.store import open_store, open_store_to_read
from retrieval_eval.workflows.lint import stored_for_lint

N = 20
SET = golden(*(question(f"q{i}", f"Question number {i}?", "match", f"d{i}.md") for i in range(N)))
FIRST: dict[int, int | None] = {i: 1 if i < 10 else 4 if i < 15 else None for i in range(N)}
# each run's changes from the one before: (question, its target's new rank)
SECOND = {**FIRST, 0: None, 15: 1, 10: 9}  # top-1: +q15 -q0; top-5: +q15 -q0 -q10
THIRD = {**SECOND, 1: 4, 16: 2, 17: 1}  # top-1: +q17 -q1; top-5: +q16 +q17
CHURN = {1: (1 / N + 1 / N) / 2, 5: (1 / N + 0) / 2}  # the smaller way of each pair, averaged


def _retriever(ranks: dict[int, int | None]) -> FunctionRetriever:
    def search(text: str, limit: int) -> Sequence[str]:
        i = int(text.removeprefix("Question number ").rstrip("?"))
        ranking = [f"other-{i}-{r}" for r in range(12)]
        if ranks[i] is not None:
            ranking[ranks[i] - 1] = f"d{i}.md"  # type: ignore[operator]
        return ranking[:limit]

    return FunctionRetriever(search, identifier="bm25")


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> str:
    found = f"sqlite:///{tmp_path_factory.mktemp('power_stored') / 'results.sqlite'}"
    with open_store(found) as store:
        for ranks in (FIRST, SECOND, THIRD):
            store.runs.save(evaluate(SET, _retriever(ranks), RunSettings(depths=[1, 5])))
    return found


def test_the_churn_is_measured_at_each_gated_depth_over_the_stored_runs(url: str) -> None:
    with open_store_to_read(url) as reader:
        report = run_lint(
            SET, retriever=_retriever(THIRD), stored=stored_for_lint(reader, SET), depths=[1, 5]
        )
    power = report.power
    assert power is not None
    assert power.churn_at == pytest.approx(CHURN)
    assert power.churn_from == "measured over 3 stored runs of bm25"
    assert power.rates_from.startswith("stored run 3 of bm25")
    overall = {f.metric: f for f in power.figures if f.scope == "overall"}
    assert set(overall) == {"top1", "top5"}
    top5 = overall["top5"]
    assert top5.rate == pytest.approx(16 / N)  # the newest run's: 16 targets within rank 5
    assert top5.detectable_drop == pytest.approx(
        detectable_drop(N, rate=16 / N, churn=CHURN[5], alpha=power.alpha, power=power.power)
    )
    # the assumed churn (0.05) would have given another figure: the measurement is used
    assumed = detectable_drop(N, rate=16 / N, churn=0.05, alpha=power.alpha, power=power.power)
    assert top5.detectable_drop != pytest.approx(assumed)
    text = RENDERERS["text"](report)
    assert "churn top-1 0.050, top-5 0.025 (measured over 3 stored runs of bm25)" in text


def test_without_two_stored_runs_the_churn_is_assumed_and_said(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(url) as store:
        store.runs.save(evaluate(SET, _retriever(FIRST), RunSettings(depths=[1, 5])))
    with open_store_to_read(url) as reader:
        report = run_lint(SET, retriever=_retriever(FIRST), stored=stored_for_lint(reader, SET))
    power = report.power
    assert power is not None and power.churn_at == {} and power.churn_from.startswith("assumed")
    # the depths default to the stored run's gated ones
    assert {f.metric for f in power.figures if f.scope == "overall"} == {"top1", "top5"}
    assert "churn 0.05 (assumed: no two stored runs to measure it)" in RENDERERS["text"](report)

"""A result store filled by real evaluations of the demo: good runs, a regression, two retrievers.

The runs are real (BM25 over the demo handbook through the scoring protocol) and recorded through
``recording.record_run`` like the CLI does; only their start times are spread over days, so the
history reads like nightly runs. One question's text carries a ``<script>`` tag and one retriever
identifier carries markup, to prove the dashboard renders stored strings inert.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from retrieval_eval.config.models import load_config
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.retrievers.base import EvaluatableRetriever, FunctionRetriever
from retrieval_eval.workflows.labelled_run import (
    resolve_retriever,
    resolve_set,
    resolve_settings,
    resolve_thresholds,
)
from retrieval_eval.workflows.recording import record_run

SET = "handbook.demo"
BM25 = "handbook_bm25"
TRUNCATED = "handbook_bm25_top1"
MARKUP = '"><img src=x onerror=alert(1)>'
SCRIPT = "<script>window.__pwned = 1</script>"

Degrade = Callable[[list[str]], list[str]]


@dataclass
class Filled:
    url: str
    run_ids: dict[str, list[int]] = field(default_factory=dict)  # retriever -> ids, oldest first
    regression_ids: list[int] = field(default_factory=list)
    script_question_id: str = ""


def _wrap(real: EvaluatableRetriever, name: str, degrade: Degrade | None) -> EvaluatableRetriever:
    def search(question: str, limit: int) -> Sequence[str]:
        ranked = list(real.retrieve(question, limit))
        return degrade(ranked) if degrade else ranked

    return FunctionRetriever(search, identifier=name)


def fill(url: str, config_path: Path) -> Filled:
    config = load_config(config_path)
    golden = resolve_set(config, SET)
    first = golden.questions[0]
    # stored question text with markup in it; ids and labels (the fingerprint) stay the same
    scripted = first.model_copy(update={"question": f"{SCRIPT} {first.question}"})
    golden = golden.model_copy(update={"questions": (scripted, *golden.questions[1:])})
    settings = resolve_settings(config, SET, BM25)
    thresholds = resolve_thresholds(config, SET, BM25)
    real = resolve_retriever(config, BM25)
    filled = Filled(url=url, script_question_id=first.id)

    def reverse(ranked: list[str]) -> list[str]:
        return ranked[::-1]

    def top1(ranked: list[str]) -> list[str]:
        return ranked[:1]

    plan: list[tuple[str, Degrade | None]] = [
        (BM25, None),  # baseline
        (BM25, None),  # no regression
        (TRUNCATED, top1),  # another retriever on the same set
        (BM25, reverse),  # regression: the ranking turned upside down
        (TRUNCATED, top1),
        (BM25, None),  # no regression against the last good run
        (MARKUP, None),
    ]
    start = datetime.now(UTC) - timedelta(days=len(plan))
    for day, (name, degrade) in enumerate(plan):
        result = evaluate(golden, _wrap(real, name, degrade), settings)
        result = result.model_copy(update={"started_at": start + timedelta(days=day)})
        recorded = record_run(result, store_url=url, thresholds=thresholds)
        assert recorded.saved and recorded.run_id is not None, recorded
        filled.run_ids.setdefault(name, []).append(recorded.run_id)
        if recorded.verdict.is_regression:
            filled.regression_ids.append(recorded.run_id)
    return filled

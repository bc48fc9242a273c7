"""Dead labels on real data: SciFact (5,183 abstracts, 300 test claims) with the lexical adapter.

With the full corpus nothing is dead. A copy of the corpus without 10 target abstracts (an index
rebuild that dropped them) has exactly those 10 dead; the claims whose every target is among
them are ``stale_label`` in the next run's judgement against a baseline stored from the full
corpus: left out of both runs' rates, not counted as hit->miss flips, no regression.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from helpers import shared_collection

from retrieval_eval.config.models import Thresholds
from retrieval_eval.evaluation.labels import attach_dead_labels, find_dead_labels
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import import_beir
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.lint.dead import check_dead_labels
from retrieval_eval.retrievers.lexical import LexicalRetriever
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.verdicts.regression import detect_regression
from retrieval_eval.workflows.recording import record_run

REMOVED = 10


def lexical(corpus: Path) -> LexicalRetriever:
    return LexicalRetriever.from_options("scifact_bm25", {"corpus": str(corpus)}, BuildContext())


def removed_documents(golden: GoldenQuestionSet) -> list[str]:
    """Ten targets that leave claims without any target: the sole targets of the first claims
    (by id) that have exactly one, so at least some claims go stale, chosen by rule not by hand."""
    single = sorted(
        (q for q in golden.questions if len(q.expected_document_ids) == 1),
        key=lambda q: int(q.id),
    )
    chosen: list[str] = []
    for question in single:
        doc = question.expected_document_ids[0]
        if doc not in chosen:
            chosen.append(doc)
        if len(chosen) == REMOVED:
            break
    return chosen


@pytest.fixture(scope="module")
def scifact(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = shared_collection("scifact")
    golden = import_beir(folder, split="test", identifier="scifact")
    removed = removed_documents(golden)
    shrunk = tmp_path_factory.mktemp("scifact_shrunk") / "corpus.jsonl"
    kept = 0
    with (folder / "corpus.jsonl").open(encoding="utf-8") as source, shrunk.open("w") as out:
        for line in source:
            if line.strip() and json.loads(line)["_id"] not in removed:
                out.write(line)
                kept += 1
    assert kept == 5183 - REMOVED
    return {"folder": folder, "golden": golden, "removed": removed, "shrunk": shrunk}


def test_the_full_corpus_has_no_dead_labels(scifact: dict[str, Any]) -> None:
    retriever = lexical(scifact["folder"] / "corpus.jsonl")
    found = find_dead_labels(scifact["golden"], retriever)
    assert found.checked and found.source == "corpus"
    assert found.dead_ids == [] and found.stale_questions == [] and found.partly_dead == {}
    assert check_dead_labels(scifact["golden"], retriever) == []  # lint's check agrees


def test_a_shrunk_corpus_has_exactly_the_removed_ids_dead_and_their_claims_are_stale(
    scifact: dict[str, Any], tmp_path: Path
) -> None:
    golden, removed = scifact["golden"], scifact["removed"]
    full = lexical(scifact["folder"] / "corpus.jsonl")
    store = f"sqlite:///{tmp_path / 'results.sqlite'}"
    # tight thresholds: the stale claims' misses alone (-3.0 pts top-1, -3.7 top-3 measured)
    # would be a regression; left out, the judged claims did not move at all
    thresholds = Thresholds(max_top1_drop=0.02, max_top3_drop=0.02)
    baseline = record_run(
        attach_dead_labels(evaluate(golden, full), golden, full),
        store_url=store,
        thresholds=thresholds,
    )
    assert baseline.verdict.state == "baseline" and baseline.verdict.dead_ids == []

    shrunk = lexical(scifact["shrunk"])
    result = attach_dead_labels(evaluate(golden, shrunk), golden, shrunk)
    assert result.dead_labels is not None
    assert result.dead_labels.dead_ids == sorted(removed)  # exactly those 10
    expected_stale = [
        q.id for q in golden.questions if set(q.expected_document_ids) <= set(removed)
    ]
    assert len(expected_stale) >= 3  # "some questions become stale"
    assert result.dead_labels.stale_questions == expected_stale
    partly = {
        q.id: sorted(set(q.expected_document_ids) & set(removed))
        for q in golden.questions
        if set(q.expected_document_ids) & set(removed) and q.id not in expected_stale
    }
    assert result.dead_labels.partly_dead == partly

    recorded = record_run(result, store_url=store, thresholds=thresholds)
    verdict = recorded.verdict
    assert verdict.baseline_run_id == baseline.run_id
    assert verdict.state == "no_regression" and not verdict.is_regression
    assert verdict.top1_delta == 0 and verdict.top3_delta == 0
    assert verdict.stale_questions == expected_stale
    assert verdict.dead_ids == sorted(removed)
    # stale, not misses: none of them is a hit->miss flip, though every one misses now ...
    by_id = {q.id: q for q in result.questions}
    assert all(not by_id[qid].top3_hit for qid in expected_stale)
    assert not set(verdict.flipped_to_miss) & set(expected_stale)
    assert not set(verdict.top3_flipped_to_miss) & set(expected_stale)
    # ... and the JSON contract marks them
    stale_rows = [q for q in result.contract()["questions"] if q.get("stale_label")]
    assert [q["id"] for q in stale_rows] == expected_stale
    # without the check, those claims WOULD be judged as misses: the ones the full corpus hit
    # flip hit->miss in the plain judgement
    plain = detect_regression(
        result.model_copy(update={"dead_labels": None}),
        _stored(store, baseline.run_id),
        thresholds,
    )
    hit_before = [qid for qid in expected_stale if _hit_before(store, baseline.run_id, qid)]
    assert hit_before and set(hit_before) <= set(plain.flipped_to_miss)
    assert plain.state == "regression"  # a drop explained entirely by dead labels


def _stored(store_url: str, run_id: int | None) -> Any:
    from retrieval_eval.store import open_store

    assert run_id is not None
    with open_store(store_url) as store:
        return store.get_run(run_id)


def _hit_before(store_url: str, run_id: int | None, question_id: str) -> bool:
    run = _stored(store_url, run_id)
    return any(q.top1_hit for q in run.result.questions if q.id == question_id)

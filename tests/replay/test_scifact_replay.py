"""Replays on SciFact: all of queries.jsonl as the sample, BM25 against BM25 with other k1/b,
and BM25 against the dense reference run. The figures are docs/how-to/index-rebuild.md's ("Replays on SciFact")."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from helpers import shared_collection

from retrieval_eval.config.models import load_config
from retrieval_eval.workflows.replay import run_replay


@pytest.fixture(scope="module")
def config(tmp_path_factory: pytest.TempPathFactory):
    scifact = shared_collection("scifact")
    corpus = str(scifact / "corpus.jsonl")
    data = {
        "retrievers": {
            "bm25": {"type": "lexical", "corpus": corpus},
            "bm25_k1_0.9_b_0.4": {"type": "lexical", "corpus": corpus, "k1": 0.9, "b": 0.4},
            "dense": {
                "type": "run_file",
                "path": str(scifact / "runs" / "dense_minilm.run"),
                "missing": "error",
            },
        },
        "samples": {
            "scifact": {
                "source": {"path": str(scifact / "queries.jsonl"), "id_field": "_id"},
                "privacy": "plain",
            }
        },
        # the reference run holds the 300 test queries only: the others are its errors
        "drift": {"max_error_rate": 0.8},
    }
    path: Path = tmp_path_factory.mktemp("scifact") / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(data))
    return load_config(path)


def test_bm25_against_bm25_with_other_k1_and_b(config) -> None:
    outcome = run_replay(config, None, "scifact", "bm25", against="bm25_k1_0.9_b_0.4")
    c = outcome.comparison
    assert len(outcome.rankings) == 1105  # 1,109 lines, four texts twice
    assert c.errors == 0 and c.state == "no_drift"
    assert c.overall.mean_rbo == pytest.approx(0.870, abs=0.0005)
    assert c.overall.top1_changed == 109


def test_bm25_against_the_dense_reference_run(config) -> None:
    outcome = run_replay(config, None, "scifact", "bm25", against="dense")
    c = outcome.comparison
    # the run holds the 300 test queries (two of them share a text with a train query, so 298
    # distinct texts carry one); every other query is an error, never "unchanged"
    assert c.errors == 807 and c.overall.queries == 298 and c.state == "drift"
    assert c.overall.mean_rbo == pytest.approx(0.386, abs=0.0005)
    assert c.overall.top1_changed == 139

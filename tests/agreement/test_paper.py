"""The paper-table check: BM25 defaults over SciFact reproduce bm25s's published nDCG@10.

bm25s reports nDCG@10 = 0.687 on BEIR SciFact (test split) for its defaults: Lucene BM25,
k1 1.5, b 0.75, English stop words and the Snowball English stemmer over title + text. The
``lexical`` retriever with its defaults, scored by this tool, must land within 0.005 of it.
"""

from __future__ import annotations

import pytest
from helpers import shared_collection

from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.importers import import_beir
from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever

PUBLISHED_NDCG_AT_10 = 0.687


def test_lexical_defaults_reproduce_the_published_scifact_ndcg(
    capsys: pytest.CaptureFixture[str],
) -> None:
    root = shared_collection("scifact")
    options = LexicalOptions(corpus=root / "corpus.jsonl")
    assert (options.k1, options.b, options.method) == (1.5, 0.75, "lucene")
    assert (options.stopwords, options.stemmer) == ("en", "english")
    retriever = LexicalRetriever("scifact_bm25", options)
    result = evaluate(import_beir(root, "test"), retriever, RunSettings(cutoffs=[1, 3, 10]))
    assert result.question_count == 300 and result.error_count == 0
    ndcg = result.metrics["ndcg@10"]
    line = (
        f"SciFact test, lexical defaults: nDCG@10 {ndcg:.4f} (published {PUBLISHED_NDCG_AT_10}), "
        f"top-1 {result.top1_hit_rate:.4f}, top-3 {result.top3_hit_rate:.4f}"
    )
    with capsys.disabled():
        print(f"\n{line}")
    assert ndcg is not None
    assert abs(ndcg - PUBLISHED_NDCG_AT_10) <= 0.005, line

"""A corpus's MinHash signatures, kept in the adapter cache like the BM25 index.

Signing every document is most of label completeness's cost, and the corpus rarely changes
between two lints (the DAG's lint task runs before every evaluation). When the corpus comes from
a path, its signatures and shingle counts are an entry of :mod:`retrieval_eval.retrievers.cache`
(kind ``lint-minhash``), keyed by the corpus content and the MinHash parameters, so an edited
document or a change of parameters makes a new entry. Word hashes (:mod:`.wordhash`) are the
same in every process, so cached signatures compare with fresh ones. Documents given as objects
(no path) are signed each time. ``RETRIEVAL_EVAL_CACHE=off`` turns the cache off, as for the
adapters.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from retrieval_eval.lint import minhash
from retrieval_eval.lint.minhash import ShingleSets
from retrieval_eval.retrievers.corpus import Document

KIND = "lint-minhash"
SHINGLE_WORDS = 3
_VERSION = 1  # bump when the hashing or the shingles change


def corpus_signatures(
    documents: Sequence[Document], corpus: Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Each document's signature row and shingle count, in ``documents``' order."""

    def build(folder: Path | None = None) -> tuple[np.ndarray, np.ndarray]:
        sets = ShingleSets.from_texts([doc.content for doc in documents], SHINGLE_WORDS)
        sigs, counts = sets.signatures(), sets.counts
        if folder is not None:
            np.save(folder / "signatures.npy", sigs)
            np.save(folder / "counts.npy", counts)
        return sigs, counts

    def load(folder: Path) -> tuple[np.ndarray, np.ndarray]:
        return np.load(folder / "signatures.npy"), np.load(folder / "counts.npy")

    if corpus is None:
        return build()
    from retrieval_eval.retrievers.cache import cache_key, cached

    options = {
        "version": _VERSION,
        "shingle_words": SHINGLE_WORDS,
        "permutations": minhash.PERMUTATIONS,
        "seed": minhash.SEED,
        "documents": len(documents),
    }
    return cached(KIND, cache_key(KIND, options, corpus), build, load)

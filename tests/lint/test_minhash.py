"""MinHash/LSH: estimates near the exact similarity, every pair above the threshold found,
few candidates among unrelated texts (sub-quadratic by construction; timed in benchmarks)."""

from __future__ import annotations

import random

import numpy as np

from retrieval_eval.lint.minhash import LshIndex, ShingleSets, jaccard


def _texts(count: int, length: int, seed: int) -> list[list[str]]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(5000)]
    return [[rng.choice(vocabulary) for _ in range(length)] for _ in range(count)]


def test_signature_agreement_estimates_the_exact_jaccard() -> None:
    base = _texts(1, 300, seed=1)[0]
    edited = base[:200] + _texts(1, 100, seed=2)[0]  # a third replaced
    sets = ShingleSets.from_tokens([base, edited], 3)
    exact = jaccard(sets.shingles(0), sets.shingles(1))
    sigs = sets.signatures()
    estimate = float(np.mean(sigs[0] == sigs[1]))
    assert 0.4 < exact < 0.6
    assert abs(estimate - exact) < 0.2  # 60 minima: standard error ~0.065


def test_every_planted_near_duplicate_is_a_candidate_and_unrelated_texts_rarely_are() -> None:
    texts = _texts(400, 120, seed=3)
    planted = []
    for k in range(20):  # copies with one word in 40 changed: Jaccard ~0.85-0.95
        copy = list(texts[k])
        for i in range(0, len(copy), 40):
            copy[i] = f"changed{k}"
        texts.append(copy)
        planted.append((k, 400 + k))
    sets = ShingleSets.from_tokens(texts, 3)
    pairs = set(LshIndex(sets.signatures(), sets.counts).candidates())
    for pair in planted:
        assert jaccard(sets.shingles(pair[0]), sets.shingles(pair[1])) >= 0.8
        assert pair in pairs
    all_pairs = len(texts) * (len(texts) - 1) // 2
    assert len(pairs) < 0.01 * all_pairs  # unrelated random texts share no band


def test_short_and_empty_texts() -> None:
    sets = ShingleSets.from_tokens([["a", "b"], ["a", "b"], [], ["c"]], 3)
    assert list(sets.counts) == [1, 1, 0, 1]  # padded to one shingle; the empty text has none
    index = LshIndex(sets.signatures(), sets.counts)
    assert index.query(0) == {1}
    assert index.query(2) == set()
    assert jaccard(sets.shingles(0), sets.shingles(1)) == 1.0
    assert jaccard(sets.shingles(0), sets.shingles(3)) == 0.0


def test_shingles_do_not_cross_text_boundaries() -> None:
    together = ShingleSets.from_tokens([["a", "b", "c"], ["d", "e", "f"]], 3)
    assert list(together.counts) == [1, 1]
    alone = ShingleSets.from_tokens([["a", "b", "c"]], 3)
    assert np.array_equal(together.shingles(0), alone.shingles(0))


def test_documents_hashed_from_their_bytes_shingle_like_their_words() -> None:
    texts = ["The quick brown fox", "the  QUICK\nbrown fox", "", "Ünïcode wörds here too", "a b"]
    from_bytes = ShingleSets.from_texts(texts, 3)
    assert list(from_bytes.counts) == [2, 2, 0, 2, 1]
    assert np.array_equal(from_bytes.shingles(0), from_bytes.shingles(1))  # case and spacing
    assert jaccard(from_bytes.shingles(0), from_bytes.shingles(3)) == 0.0

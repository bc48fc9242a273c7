from __future__ import annotations

import numpy as np
import pytest

from retrieval_eval.lint import wordhash
from retrieval_eval.lint.wordhash import word_hashes


def test_equal_words_hash_equal_across_texts_case_and_whitespace() -> None:
    hashes, lengths = word_hashes(["Hello world", "hello \t WORLD\nagain", "", "   "])
    assert list(lengths) == [2, 3, 0, 0]
    assert hashes[0] == hashes[2] and hashes[1] == hashes[3]
    assert len(set(hashes.tolist())) == 3  # hello, world, again


def test_non_ascii_words_keep_their_case_and_differ_from_ascii() -> None:
    hashes, _ = word_hashes(["Ärger ärger arger"])
    assert len(set(hashes.tolist())) == 3


def test_chunking_does_not_change_the_hashes(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"word{i} shared text number {i % 7}" for i in range(500)]
    whole = word_hashes(texts)
    monkeypatch.setattr(wordhash, "CHUNK_BYTES", 64)  # a chunk every two or three texts
    chunked = word_hashes(texts)
    assert np.array_equal(whole[0], chunked[0]) and np.array_equal(whole[1], chunked[1])


def test_no_texts() -> None:
    hashes, lengths = word_hashes([])
    assert hashes.size == 0 and lengths.size == 0

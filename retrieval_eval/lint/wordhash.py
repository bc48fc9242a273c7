"""The 64-bit hashes of every word of many texts, computed with numpy over their bytes.

Making a Python string per word (``str.split``) and hashing it costs most of label
completeness on a large corpus; this works on the UTF-8 bytes instead. A word is a run of
bytes other than ASCII whitespace; ASCII letters are lower-cased (other characters compare as
they are). A word's hash is the polynomial ``sum((b_k + 1) * M**k)`` over its bytes, modulo
2**64, read off prefix sums: ``(P[end] - P[start]) * M**-start``, where ``M`` is odd and so
invertible modulo 2**64. Equal words get equal hashes in any text and any process.

Texts go through in chunks of about ``CHUNK_BYTES`` so the temporaries (a few 64-bit values
per byte) stay small, whatever the corpus size.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

CHUNK_BYTES = 1 << 21
_M = 0x9E3779B97F4A7C15  # odd
_M_INVERSE = pow(_M, -1, 1 << 64)


def word_hashes(texts: Iterable[str]) -> tuple[np.ndarray, np.ndarray]:
    """Every word's hash in text order, and each text's word count."""
    hashes: list[np.ndarray] = []
    lengths: list[np.ndarray] = []
    powers: dict[int, np.ndarray] = {}
    chunk: list[bytes] = []
    size = 0
    for text in texts:
        encoded = text.encode("utf-8", "replace")
        chunk.append(encoded)
        size += len(encoded) + 1
        if size >= CHUNK_BYTES:
            _add(chunk, hashes, lengths, powers)
            chunk, size = [], 0
    if chunk:
        _add(chunk, hashes, lengths, powers)
    if not lengths:
        return np.empty(0, dtype=np.uint64), np.empty(0, dtype=np.int64)
    return np.concatenate(hashes), np.concatenate(lengths)


def _powers(base: int, count: int, known: dict[int, np.ndarray]) -> np.ndarray:
    """``base**k`` modulo 2**64 for k < count, kept in ``known`` for the next chunk (one call's
    chunks need the same ones; nothing outlives the call)."""
    have = known.get(base)
    if have is None or len(have) < count:
        have = np.full(count, base, dtype=np.uint64)
        have[0] = 1
        have = known[base] = np.cumprod(have, dtype=np.uint64)  # wraps modulo 2**64
    return have[:count]


def _add(
    chunk: list[bytes],
    hashes: list[np.ndarray],
    lengths: list[np.ndarray],
    powers: dict[int, np.ndarray],
) -> None:
    data = np.frombuffer(
        b"\n".join(chunk), dtype=np.uint8
    )  # "\n" is whitespace: no word spans texts
    text_starts = np.cumsum([0] + [len(b) + 1 for b in chunk[:-1]])
    space = (data == 32) | ((data >= 9) & (data <= 13))
    before = np.concatenate(([True], space[:-1]))
    after = np.concatenate((space[1:], [True]))
    starts = np.flatnonzero(~space & before)
    ends = np.flatnonzero(~space & after) + 1
    values = data.astype(np.uint64) + ((data >= 65) & (data <= 90)).astype(np.uint64) * 32 + 1
    prefix = np.zeros(len(data) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumsum(values * _powers(_M, len(data), powers), out=prefix[1:])
        inverse = _powers(_M_INVERSE, len(data), powers)
        hashes.append((prefix[ends] - prefix[starts]) * inverse[starts])
    owner = np.searchsorted(text_starts, starts, side="right") - 1
    lengths.append(np.bincount(owner, minlength=len(chunk)).astype(np.int64))

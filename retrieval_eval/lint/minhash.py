"""MinHash signatures and LSH banding: near-duplicate candidates without comparing every pair.

A text is a list of tokens (a document's words, hashed by :mod:`.wordhash`; a question's
characters, by Python's ``hash()``, salted per process, which is fine because signatures are
compared within one lint run and never stored) and its shingles are the token ``n``-grams, each
a 64-bit hash combining its tokens' hashes with a fixed odd multiplier. A text shorter than ``n`` tokens is
padded to one shingle; an empty text has none and is nobody's near duplicate. All texts are
hashed in one pass over their concatenation, shingles crossing a boundary dropped.

Each text gets ``PERMUTATIONS`` (48) minimum hashes under random multiply-shift hashes
``(a*x + b) >> 32`` in wrapping 64-bit arithmetic (``a`` odd) from a fixed seed; the fraction of
equal minima estimates the Jaccard similarity.

Banding: the minima are cut into ``BANDS`` = 16 bands of ``ROWS`` = 3; two texts are
*candidates* when any band is equal. The chance of that is ``1 - (1 - J**3)**16``: ~1.0 at
J = 0.8 (a miss once in 100,000 pairs; at 0.85, once in 4 million), 0.88 at 0.5, 0.36 at 0.3,
0.12 at 0.2. So every
pair at the lint thresholds (0.8) is found, and each candidate is checked with its exact
Jaccard similarity (:func:`jaccard` over the distinct shingles): the estimate never decides a
finding.

Cost: hashing and signing are linear in the total tokens; bucketing is linear in the number of
texts; candidates are the pairs sharing a bucket, so the work grows with the number of similar
pairs, not with the square of the number of texts (``benchmarks/lint.py`` measures it). A bucket
that many texts share (boilerplate every page repeats, a template-generated question set) costs
the square of its size in :meth:`LshIndex.candidates`; :meth:`LshIndex.bounded_candidates` pairs
each text only with its next few neighbours in each bucket, at most so many pairs per text and in
all, and counts what it left out, so its cost is linear in the number of texts whatever they are.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import chain

import numpy as np

PERMUTATIONS = 48
BANDS = 16
ROWS = PERMUTATIONS // BANDS
SEED = 20261130
_MIX = np.uint64(0x9E3779B97F4A7C15)
_PAD = np.uint64(0x5BD1E9955BD1E995)  # the token that pads a text shorter than n tokens
_BLOCK = 4096  # shingles per numpy pass (see ShingleSets.signatures)
_MAX = np.iinfo(np.uint64).max
_SMALL = 512  # shingles in two texts below which jaccard uses Python sets


def _parameters() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(SEED)
    a = rng.integers(0, 2**63, size=PERMUTATIONS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    b = rng.integers(0, 2**63, size=PERMUTATIONS, dtype=np.uint64)
    band = rng.integers(0, 2**63, size=ROWS, dtype=np.uint64) * np.uint64(2) + np.uint64(1)
    return a[:, None], b[:, None], band


_A, _B, _BAND_MIX = _parameters()


class ShingleSets:
    """The ``n``-gram shingles of many token lists, hashed in one pass."""

    def __init__(self, hashed: np.ndarray, lengths: np.ndarray, n: int) -> None:
        """From every token's hash in text order and each text's token count; see
        :meth:`from_tokens` and :meth:`from_texts`."""
        short = (lengths > 0) & (lengths < n)
        if short.any():  # pad each short text to one shingle
            pads = np.where(short, n - lengths, 0)
            shift = np.concatenate(([0], np.cumsum(pads)[:-1]))
            padded = np.full(len(hashed) + int(pads.sum()), _PAD, dtype=np.uint64)
            padded[np.arange(len(hashed)) + np.repeat(shift, lengths)] = hashed
            hashed, lengths = padded, lengths + pads
        starts = max(len(hashed) - n + 1, 0)
        combined = np.zeros(starts, dtype=np.uint64)
        with np.errstate(over="ignore"):
            for offset in range(n):
                combined = combined * _MIX + hashed[offset : offset + starts]
        owner = np.repeat(np.arange(len(lengths)), lengths)[:starts]
        ends = np.repeat(np.cumsum(lengths), lengths)[:starts]
        valid = np.arange(starts) + n <= ends
        self._hashes = combined[valid]
        self.counts = np.bincount(owner[valid], minlength=len(lengths))
        self._offsets = np.concatenate(([0], np.cumsum(self.counts)[:-1])).astype(np.int64)
        self._distinct: dict[int, np.ndarray] = {}

    @classmethod
    def from_tokens(cls, token_lists: Sequence[Sequence[str]], n: int) -> ShingleSets:
        """Token lists (a question's characters), hashed with Python's ``hash()``."""
        flat = list(chain.from_iterable(token_lists))
        hashed = np.fromiter(map(hash, flat), dtype=np.int64, count=len(flat)).view(np.uint64)
        lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
        return cls(hashed, lengths, n)

    @classmethod
    def from_texts(cls, texts: Sequence[str], n: int) -> ShingleSets:
        """Texts split into lower-cased whitespace-separated words (:mod:`.wordhash`)."""
        from retrieval_eval.lint.wordhash import word_hashes

        return cls(*word_hashes(texts), n)

    def __len__(self) -> int:
        return len(self.counts)

    def shingles(self, i: int) -> np.ndarray:
        """Text ``i``'s distinct shingle hashes, sorted (computed when first asked)."""
        if i not in self._distinct:
            start = self._offsets[i]
            self._distinct[i] = np.unique(self._hashes[start : start + self.counts[i]])
        return self._distinct[i]

    def signatures(self) -> np.ndarray:
        """One row of ``PERMUTATIONS`` minima per text (an empty text: all maxima).

        Texts go in blocks of about ``_BLOCK`` shingles, so each block's temporary
        (permutations x shingles) stays in the CPU cache rather than one array for all texts.
        """
        out = np.full((len(self), PERMUTATIONS), _MAX, dtype=np.uint64)
        present = np.flatnonzero(self.counts > 0)
        counts = self.counts[present].tolist()
        i = 0
        with np.errstate(over="ignore"):
            while i < len(present):
                j, total = i + 1, counts[i]
                while j < len(present) and total + counts[j] <= _BLOCK:
                    total += counts[j]
                    j += 1
                ids = present[i:j]
                start = self._offsets[ids[0]]
                block = self._hashes[None, start : start + total]
                mixed = (_A * block + _B) >> np.uint64(32)
                out[ids] = np.minimum.reduceat(mixed, self._offsets[ids] - start, axis=1).T
                i = j
        return out


def jaccard(left: np.ndarray, right: np.ndarray) -> float:
    """Exact Jaccard similarity of two sorted distinct hash arrays (short ones, a question's, as
    Python sets: numpy's set operations carry a fixed overhead that dwarfs a short array)."""
    if left.size == 0 and right.size == 0:
        return 1.0
    if left.size + right.size <= _SMALL:
        common = len(set(left.tolist()).intersection(right.tolist()))
    else:
        common = np.intersect1d(left, right, assume_unique=True).size
    return common / (left.size + right.size - common)


class LshIndex:
    """Texts bucketed by band of their signatures (``counts[i] == 0``: an empty text, left out);
    only buckets of two or more are kept."""

    def __init__(self, sigs: np.ndarray, counts: np.ndarray) -> None:
        with np.errstate(over="ignore"):
            self._keys = (sigs.reshape(len(sigs), BANDS, ROWS) * _BAND_MIX).sum(axis=2)
        self._present_ids = np.flatnonzero(counts > 0)
        self._present = set(self._present_ids.tolist())
        self._bucket_lists: list[dict[int, list[int]]] | None = None
        self.skipped = 0  # pairs sharing a bucket that bounded_candidates left out

    @property
    def _buckets(self) -> list[dict[int, list[int]]]:
        """Each band's shared buckets as lists, built when first needed (by query and
        candidates, not by bounded_candidates)."""
        if self._bucket_lists is None:
            self._bucket_lists = self._build_buckets()
        return self._bucket_lists

    def _build_buckets(self) -> list[dict[int, list[int]]]:
        present = self._present_ids
        buckets: list[dict[int, list[int]]] = []
        for band in range(BANDS):
            keys = self._keys[present, band]
            _, inverse, sizes = np.unique(keys, return_inverse=True, return_counts=True)
            shared_mask = sizes[inverse] > 1
            members, member_keys = present[shared_mask].tolist(), keys[shared_mask].tolist()
            shared: dict[int, list[int]] = {}
            for i, key in zip(members, member_keys, strict=True):
                shared.setdefault(key, []).append(i)
            buckets.append(shared)
        return buckets

    def query(self, i: int) -> set[int]:
        """The other texts sharing at least one band with text ``i``."""
        found: set[int] = set()
        if i not in self._present:
            return found
        for band, key in enumerate(self._keys[i].tolist()):
            found.update(self._buckets[band].get(key, ()))
        found.discard(i)
        return found

    def candidates(self) -> Iterator[tuple[int, int]]:
        """Every pair (low, high) sharing a bucket, once."""
        seen: set[tuple[int, int]] = set()
        for buckets in self._buckets:
            for members in buckets.values():  # in increasing order
                for k, left in enumerate(members):
                    for right in members[k + 1 :]:
                        if (left, right) not in seen:
                            seen.add((left, right))
                            yield left, right

    def bounded_candidates(
        self, *, neighbours: int, whole: int
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """Pairs sharing a bucket, bounded, as arrays (left ids, right ids): a bucket of at most
        ``whole`` members gives all its pairs; in a larger one (members in increasing order)
        each text is paired with its next ``neighbours`` members only, enough to chain a bucket
        of near duplicates into one group when the caller joins them transitively. At most
        ``max(whole - 1, neighbours)`` pairs per text and band, whatever the texts.
        :attr:`skipped` counts the bucket-sharing pairs left out (a pair sharing several bands
        counts once per band). A pair may come more than once (from several bands)."""
        present = self._present_ids
        for band in range(BANDS):
            keys = self._keys[present, band]
            order = np.argsort(keys, kind="stable")
            ranked, ids = keys[order], present[order]
            _, inverse, sizes = np.unique(ranked, return_inverse=True, return_counts=True)
            big = sizes[sizes > whole].astype(np.int64)  # buckets the window cuts
            window = neighbours * big - neighbours * (neighbours + 1) // 2
            self.skipped += int((big * (big - 1) // 2 - window).sum())
            small = sizes[inverse] <= whole
            for step in range(1, max(neighbours, whole - 1) + 1):
                same = ranked[step:] == ranked[:-step]
                if step > neighbours:
                    same &= small[step:]
                at = np.flatnonzero(same)
                if at.size == 0 and step > neighbours:
                    break
                yield ids[at], ids[at + step]

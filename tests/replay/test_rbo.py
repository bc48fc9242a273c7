"""RBO against the paper written out independently here, and against the ``rbo`` package.

The reference below follows Webber, Moffat & Zobel (2010) literally: Eq. (32) for RBO_ext of
uneven lists, and the bounds as RBO of the two lists COMPLETED to a great depth, once with fresh
items that agree with nothing (the minimum) and once with the items that agree most (the maximum),
summed by the definition RBO = (1 - p) sum_d p^(d-1) X_d / d.
"""

from __future__ import annotations

import random

import pytest
from rbo import RankingSimilarity

from retrieval_eval.replay.rbo import jaccard, overlap_at, rbo, top1_changed

DEPTH = 800  # p <= 0.95: p^800 < 1e-17, far below the tolerance


def by_definition(first: list[str], second: list[str], p: float, depth: int = DEPTH) -> float:
    seen_a: set[str] = set()
    seen_b: set[str] = set()
    overlap = 0
    total = 0.0
    for d in range(1, depth + 1):
        a, b = first[d - 1], second[d - 1]
        overlap += (a == b) or ((a in seen_b) + (b in seen_a))
        seen_a.add(a)
        seen_b.add(b)
        total += (1 - p) * p ** (d - 1) * overlap / d
    return total


def eq32(short: list[str], long_: list[str], p: float) -> float:
    if len(short) > len(long_):
        short, long_ = long_, short
    s, l = len(short), len(long_)  # noqa: E741
    x = [len(set(short[:d]) & set(long_[:d])) for d in range(1, l + 1)]
    x_s = x[s - 1]
    x_d = [len(set(short) & set(long_[:d])) if d > s else x[d - 1] for d in range(1, l + 1)]
    first = sum(x_d[d - 1] / d * p**d for d in range(1, l + 1))
    second = sum(x_s * (d - s) / (s * d) * p**d for d in range(s + 1, l + 1))
    return (1 - p) / p * (first + second) + ((x_d[-1] - x_s) / l + x_s / s) * p**l


def completed_apart(first: list[str], second: list[str]) -> tuple[list[str], list[str]]:
    return first + [f"a{i}" for i in range(DEPTH)], second + [f"b{i}" for i in range(DEPTH)]


def completed_together(first: list[str], second: list[str]) -> tuple[list[str], list[str]]:
    # each list continues with the other's items it lacks, in their order, then shared new items
    a = first + [x for x in second if x not in set(first)]
    b = second + [x for x in first if x not in set(second)]
    shared = [f"c{i}" for i in range(DEPTH)]
    return a + shared, b + shared


def rankings(rng: random.Random) -> tuple[list[str], list[str]]:
    universe = [f"d{i}" for i in range(rng.randint(1, 40))]
    return (
        rng.sample(universe, rng.randint(1, min(len(universe), 20))),
        rng.sample(universe, rng.randint(1, min(len(universe), 20))),
    )


@pytest.mark.parametrize("seed", range(4))
def test_rbo_equals_the_paper_and_the_rbo_package_on_random_uneven_rankings(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(100):
        first, second = rankings(rng)
        p = rng.choice([0.5, 0.8, 0.9, 0.95])
        got = rbo(first, second, p)
        assert got.ext == pytest.approx(eq32(first, second, p), abs=1e-9)
        assert got.ext == pytest.approx(RankingSimilarity(first, second).rbo_ext(p), abs=1e-9)
        assert got.minimum == pytest.approx(
            by_definition(*completed_apart(first, second), p), abs=1e-9
        )
        assert got.maximum == pytest.approx(
            by_definition(*completed_together(first, second), p), abs=1e-9
        )
        assert got.minimum - 1e-12 <= got.ext <= got.maximum + 1e-12
        assert got.residual == pytest.approx(got.maximum - got.minimum)


def test_identical_rankings_agree_fully_and_only_the_unseen_tail_is_uncertain() -> None:
    ids = [f"d{i}" for i in range(10)]
    got = rbo(ids, list(ids), 0.9)
    assert got.ext == pytest.approx(1.0)
    assert got.maximum == pytest.approx(1.0)
    assert got.minimum == pytest.approx(by_definition(*completed_apart(ids, ids), 0.9), abs=1e-9)
    assert 0.0 < got.residual < 0.9**10  # no more than the weight beyond depth 10


def test_disjoint_rankings_share_nothing_seen() -> None:
    got = rbo(["a", "b", "c"], ["x", "y", "z"], 0.9)
    assert got.ext == 0.0
    assert got.minimum == 0.0
    assert got.maximum > 0.0  # the unseen items could still agree


def test_empty_rankings() -> None:
    assert rbo([], [], 0.9).ext == 1.0 and rbo([], [], 0.9).residual == 0.0
    one_empty = rbo([], ["a"], 0.9)
    assert one_empty.ext == 0.0 and one_empty.minimum == 0.0 and one_empty.maximum == 1.0


@pytest.mark.parametrize("p", [0.0, 1.0, -0.1, 1.5])
def test_persistence_outside_the_open_interval_is_refused(p: float) -> None:
    with pytest.raises(ValueError, match="persistence"):
        rbo(["a"], ["a"], p)


def test_jaccard_top1_and_overlap() -> None:
    assert jaccard(["a", "b", "c"], ["b", "c", "d"], 3) == pytest.approx(2 / 4)
    assert jaccard([], [], 10) == 1.0
    assert jaccard(["a", "b", "c"], ["a", "x", "y"], 1) == 1.0
    assert top1_changed(["a", "b"], ["b", "a"]) and not top1_changed(["a"], ["a", "z"])
    assert top1_changed([], ["a"]) and not top1_changed([], [])
    assert overlap_at(["a", "b", "c", "d"], ["d", "c", "x", "a"], 3) == 1


@pytest.mark.parametrize("seed", range(2))
def test_the_overlaps_rbo_counts_are_jaccard_and_the_top3_overlap(seed: int) -> None:
    """compare_query reads Jaccard@k and the top-3 overlap off RBO's own counts: they must be
    what the set-based functions give, on uneven, disjoint, identical and empty lists."""
    rng = random.Random(seed)
    cases = [rankings(rng) for _ in range(200)]
    cases += [([], []), ([], ["a"]), (["a"], ["a"]), (["a", "b"], ["x", "y", "z", "a"])]
    for first, second in cases:
        got = rbo(first, second, 0.9)
        depth = max(len(first), len(second))
        assert got.jaccard == jaccard(first, second, depth)
        assert got.overlap3 == overlap_at(first, second, 3)
        assert got.overlap == len(set(first) & set(second))

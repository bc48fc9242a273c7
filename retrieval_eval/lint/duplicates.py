"""Duplicate questions: the same or nearly the same text under different ids; identical targets.

- **Duplicates** (warning): equal normalised text (:func:`~retrieval_eval.lint.text.normalised`:
  case, punctuation and spacing ignored). One finding per group.
- **Near duplicates** (warning): Jaccard similarity of the questions' character 3-grams at or
  above ``lint.question_similarity`` (default 0.8: "refund on a monthly plan" vs "refunds on a
  monthly plan" is ~0.9, a question with one of eight words changed ~0.75-0.85). Candidates come
  from MinHash/LSH (:mod:`.minhash`), so the check is not quadratic in the set size, and every
  candidate's exact similarity decides. One finding per group: near duplicates of near
  duplicates are one group (a templated set of 1,500 questions is one finding, not 725,000
  pairs); its ``similarity`` is the highest of the pairs that joined it, ``lowest_similarity``
  the lowest, ``pairs`` how many joined it (a pair already in one group is not measured again).
  The search is bounded for template-like sets, where most questions share LSH buckets: in a
  bucket of more than :data:`WHOLE_BUCKET` questions each is paired with its next
  :data:`NEIGHBOURS` bucket-mates per band only, a question is measured against at most
  :data:`PAIRS_PER_QUESTION` others, and at most :data:`MAX_PAIRS` pairs are measured in all
  (time and memory linear in the set size). Before its exact measure, a candidate must reach
  ``question_similarity`` − :data:`ESTIMATE_MARGIN` by its MinHash estimate (a pair at 0.8 falls
  below 0.55 about once in 100,000): vectorised, this drops the bulk of a template set's
  candidates. When a bound left pairs out, one info finding of its own check
  (:data:`CAPPED_CHECK`) says so: a group may then be split or miss a member.
- **Identical targets** (info): questions whose (non-empty) target lists are the same set.
  Often fine (several phrasings of one need), listed because each such group weighs one
  document several times in the hit rate.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from retrieval_eval.config.models import LintOptions
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.lint.minhash import LshIndex, ShingleSets, jaccard
from retrieval_eval.lint.models import Finding
from retrieval_eval.lint.text import normalised

CHECK = "duplicate_questions"
TARGETS_CHECK = "identical_targets"
CAPPED_CHECK = "duplicate_search_capped"
ESTIMATE_MARGIN = 0.25
_CHUNK = 65_536  # candidate pairs estimated per numpy pass
WHOLE_BUCKET = 8  # a bucket this small gives every pair
NEIGHBOURS = 4  # in a larger one, the bucket-mates each question is paired with, per band
PAIRS_PER_QUESTION = 8  # pairs a question is measured in, at most
MAX_PAIRS = 500_000  # pairs measured in all, at most


def check_duplicates(golden_set: GoldenQuestionSet, options: LintOptions) -> list[Finding]:
    questions = golden_set.questions
    findings: list[Finding] = []
    by_text: dict[str, list[int]] = defaultdict(list)
    for i, question in enumerate(questions):
        by_text[normalised(question.question)].append(i)
    group_of: dict[int, str] = {}
    for text, members in by_text.items():
        if len(members) > 1:
            ids = [questions[i].id for i in members]
            group_of.update((i, text) for i in members)
            findings.append(
                Finding(
                    check=CHECK,
                    severity="warning",
                    question_ids=ids,
                    message=f"{len(ids)} questions have the same text: {questions[members[0]].question!r}",
                    details={"similarity": 1.0},
                )
            )
    grams = ShingleSets.from_tokens(
        [normalised(q.question) for q in questions], 3
    )  # character 3-grams
    signatures = grams.signatures()
    index = LshIndex(signatures, grams.counts)
    groups = _Groups(len(questions))
    measured, capped = 0, 0
    used = np.zeros(len(questions), dtype=np.int64)
    seen: set[int] = set()  # pairs measured (at most MAX_PAIRS)
    floor = options.question_similarity - ESTIMATE_MARGIN
    for lefts, rights in index.bounded_candidates(neighbours=NEIGHBOURS, whole=WHOLE_BUCKET):
        for start in range(0, len(lefts), _CHUNK):
            left_ids, right_ids = lefts[start : start + _CHUNK], rights[start : start + _CHUNK]
            # pairs already in one group, or of a question measured enough, go before the loop
            roots = groups.roots()
            open_ = used < PAIRS_PER_QUESTION
            keep = (roots[left_ids] != roots[right_ids]) & open_[left_ids] & open_[right_ids]
            capped += int((roots[left_ids] != roots[right_ids]).sum() - keep.sum())
            left_ids, right_ids = left_ids[keep], right_ids[keep]
            estimate = (signatures[left_ids] == signatures[right_ids]).mean(axis=1)
            keep = estimate >= floor
            for left, right in zip(left_ids[keep].tolist(), right_ids[keep].tolist(), strict=True):
                if left in group_of and group_of.get(right) == group_of[left]:
                    continue  # already reported as a duplicate
                if groups.root(left) == groups.root(right):
                    continue  # already in one group: its measure adds nothing to report
                if (key := left * len(questions) + right) in seen:
                    continue  # measured already (it shares several bands)
                if measured >= MAX_PAIRS or max(used[left], used[right]) >= PAIRS_PER_QUESTION:
                    capped += 1
                    continue
                seen.add(key)
                used[left] += 1
                used[right] += 1
                similarity = jaccard(grams.shingles(left), grams.shingles(right))
                measured += 1
                if similarity >= options.question_similarity:
                    groups.join(left, right, similarity)
    findings.extend(_near_finding(questions, members, found) for members, found in groups.groups())
    if index.skipped or capped:
        findings.append(_capped(index.skipped + capped, measured))
    return findings + _identical_targets(golden_set)


def _capped(skipped: int, measured: int) -> Finding:
    return Finding(
        check=CAPPED_CHECK,
        severity="info",
        message=(
            f"the near-duplicate search was capped: {measured:,} candidate pairs measured, about "
            f"{skipped:,} more left out (many questions look alike, as in a template-generated "
            f"set; at most {NEIGHBOURS} bucket neighbours and {PAIRS_PER_QUESTION} pairs per "
            f"question, {MAX_PAIRS:,} in all); a near-duplicate group may be split or miss a "
            "member"
        ),
        details={"search_capped": True, "measured_pairs": measured, "skipped_pairs": skipped},
    )


class _Groups:
    """Union-find over question positions; each group keeps the similarities that joined it."""

    def __init__(self, size: int) -> None:
        self._parent = np.arange(size)
        self._joined: dict[int, list[float]] = {}

    def roots(self) -> np.ndarray:
        """Every position's root, as an array (pointer jumping over a copy of the parents)."""
        parent = self._parent.copy()
        while True:
            up = parent[parent]
            if np.array_equal(up, parent):
                return parent
            parent = up

    def root(self, i: int) -> int:
        parent = self._parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = int(parent[i])
        return i

    def join(self, a: int, b: int, similarity: float) -> None:
        a, b = sorted((self.root(a), self.root(b)))
        self._parent[b] = a
        self._joined.setdefault(a, []).extend([similarity, *self._joined.pop(b, [])])

    def groups(self) -> list[tuple[list[int], list[float]]]:
        """(members in set order, similarities), in the order of each group's first member."""
        members: dict[int, list[int]] = defaultdict(list)
        for i in range(len(self._parent)):
            if self.root(i) in self._joined:
                members[self.root(i)].append(i)
        return [(group, self._joined[root]) for root, group in members.items()]


def _near_finding(
    questions: tuple[GoldenQuestion, ...], members: list[int], similarities: list[float]
) -> Finding:
    a, b = questions[members[0]], questions[members[1]]
    high, low = max(similarities), min(similarities)
    if len(members) == 2:
        message = f"near-duplicate questions ({high:.0%} similar): {a.question!r} / {b.question!r}"
        details: dict[str, float | int] = {"similarity": round(high, 4)}
    else:
        message = (
            f"{len(members)} near-duplicate questions ({low:.0%}-{high:.0%} similar), e.g. "
            f"{a.question!r} / {b.question!r}"
        )
        details = {
            "similarity": round(high, 4),
            "lowest_similarity": round(low, 4),
            "pairs": len(similarities),
        }
    return Finding(
        check=CHECK,
        severity="warning",
        question_ids=[questions[i].id for i in members],
        message=message,
        details=details,
    )


def _identical_targets(golden_set: GoldenQuestionSet) -> list[Finding]:
    groups: dict[frozenset[str], list[str]] = defaultdict(list)
    for question in golden_set.questions:
        if targets := question.targets():
            groups[frozenset(targets)].append(question.id)
    return [
        Finding(
            check=TARGETS_CHECK,
            severity="info",
            question_ids=ids,
            doc_ids=sorted(targets),
            message=f"{len(ids)} questions expect exactly the same documents (fine when they are "
            "different phrasings of one need)",
        )
        for targets, ids in groups.items()
        if len(ids) > 1
    ]

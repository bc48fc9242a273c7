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
- **Identical targets** (info): questions whose (non-empty) target lists are the same set.
  Often fine (several phrasings of one need), listed because each such group weighs one
  document several times in the hit rate.
"""

from __future__ import annotations

from collections import defaultdict

from retrieval_eval.config.models import LintOptions
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.lint.minhash import LshIndex, ShingleSets, jaccard
from retrieval_eval.lint.models import Finding
from retrieval_eval.lint.text import normalised

CHECK = "duplicate_questions"
TARGETS_CHECK = "identical_targets"


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
    index = LshIndex(grams.signatures(), grams.counts)
    groups = _Groups(len(questions))
    for left, right in sorted(index.candidates()):
        if left in group_of and group_of.get(right) == group_of[left]:
            continue  # already reported as a duplicate
        if groups.root(left) == groups.root(right):
            continue  # already in one group: its measure adds nothing to report
        similarity = jaccard(grams.shingles(left), grams.shingles(right))
        if similarity >= options.question_similarity:
            groups.join(left, right, similarity)
    findings.extend(_near_finding(questions, members, found) for members, found in groups.groups())
    return findings + _identical_targets(golden_set)


class _Groups:
    """Union-find over question positions; each group keeps the similarities that joined it."""

    def __init__(self, size: int) -> None:
        self._parent = list(range(size))
        self._joined: dict[int, list[float]] = {}

    def root(self, i: int) -> int:
        parent = self._parent
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
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
        if question.expected_document_ids:
            groups[frozenset(question.expected_document_ids)].append(question.id)
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

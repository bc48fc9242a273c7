"""Duplicate questions: the same or nearly the same text under different ids; identical targets.

- **Duplicates** (warning): equal normalised text (:func:`~retrieval_eval.lint.text.normalised`:
  case, punctuation and spacing ignored). One finding per group.
- **Near duplicates** (warning): Jaccard similarity of the questions' character 3-grams at or
  above ``lint.question_similarity`` (default 0.8: "refund on a monthly plan" vs "refunds on a
  monthly plan" is ~0.9, a question with one of eight words changed ~0.75-0.85). Candidates come
  from MinHash/LSH (:mod:`.minhash`), so the check is not quadratic in the set size, and every
  candidate's exact similarity decides. One finding per pair.
- **Identical targets** (info): questions whose (non-empty) target lists are the same set.
  Often fine (several phrasings of one need), listed because each such group weighs one
  document several times in the hit rate.
"""

from __future__ import annotations

from collections import defaultdict

from retrieval_eval.config import LintOptions
from retrieval_eval.golden.models import GoldenQuestionSet
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
    for left, right in sorted(index.candidates()):
        if left in group_of and group_of.get(right) == group_of[left]:
            continue  # already reported as a duplicate
        similarity = jaccard(grams.shingles(left), grams.shingles(right))
        if similarity >= options.question_similarity:
            a, b = questions[left], questions[right]
            findings.append(
                Finding(
                    check=CHECK,
                    severity="warning",
                    question_ids=[a.id, b.id],
                    message=f"near-duplicate questions ({similarity:.0%} similar): "
                    f"{a.question!r} / {b.question!r}",
                    details={"similarity": round(similarity, 4)},
                )
            )
    return findings + _identical_targets(golden_set)


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

"""The labels fingerprint: runs are only compared when their sets label the same thing."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet


def labels_fingerprint(golden_set: GoldenQuestionSet) -> str:
    """A stable SHA-256 over what scoring depends on.

    Covers each question's id, text, form, hard class and sorted targets, and the targets'
    grades when one is not 1: a regrade changes it, a set without grades (or whose targets are
    all grade 1) keeps the fingerprint it had before grades existed. A grade-0 judgment changes
    no figure (its gain is an unjudged document's), so it is left out too; but a question judged
    without any target counts 0 in recall, MRR and nDCG where an unjudged one does not count, so
    that it is judged is in (not which documents). Question order and
    the answer gist are left out on purpose: reordering a file or documenting an answer does not
    make old runs incomparable, while editing a label does.
    """
    # tuples are written as JSON lists, like lists; _value_ is what .value returns, without
    # the enum property's Python call on every question
    rows = sorted(
        (q.id, q.question, q.form._value_, q.hard_class, sorted(q.expected_document_ids))
        if q.grades is None
        else _graded_row(q)
        for q in golden_set.questions
    )
    payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def _graded_row(q: GoldenQuestion) -> tuple[object, ...]:
    """A graded question's row: the ungraded row when every target is grade 1, else with the
    targets' grades appended; a question judged (grade 0 only) without a target is marked."""
    targets = q.targets()
    row = (q.id, q.question, q.form._value_, q.hard_class, sorted(targets))
    if not targets:
        return (*row, "judged")
    grades = q.relevance
    if all(grades[doc_id] == 1 for doc_id in targets):
        return row
    return (*row, sorted([doc_id, grades[doc_id]] for doc_id in targets))


def judged_fingerprint(golden_set: GoldenQuestionSet, relevance_level: int = 1) -> str:
    """The fingerprint a run judged at ``relevance_level`` carries: the set's at level 1, else
    one naming the level too, since other targets count there (runs are compared only at one
    level, and a level-1 run keeps the fingerprint it always had)."""
    if relevance_level == 1:
        return golden_set.fingerprint
    payload = f"{golden_set.fingerprint}@relevance_level={relevance_level}"
    return hashlib.sha256(payload.encode("ascii")).hexdigest()

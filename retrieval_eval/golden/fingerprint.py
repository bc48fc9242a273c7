"""The labels fingerprint: runs are only compared when their sets label the same thing."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet


def labels_fingerprint(golden_set: GoldenQuestionSet) -> str:
    """A stable SHA-256 over what scoring depends on.

    Covers each question's id, text, form, hard class and sorted targets, and the grades when a
    question judges a document other than 1: a regrade changes it, a set without grades (or
    whose grades are all 1) keeps the fingerprint it had before grades existed. Question order and
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
    """A graded question's row: today's row when every grade is 1, else its grades appended."""
    row = (q.id, q.question, q.form._value_, q.hard_class, sorted(q.targets()))
    if all(grade == 1 for grade in q.relevance.values()):
        return row
    return (*row, sorted(map(list, q.relevance.items())))

"""The labels fingerprint: runs are only compared when their sets label the same thing."""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from retrieval_eval.golden.models import GoldenQuestionSet


def labels_fingerprint(golden_set: GoldenQuestionSet) -> str:
    """A stable SHA-256 over what scoring depends on.

    Covers each question's id, text, form, hard class and sorted targets. Question order and the
    answer gist are left out on purpose: reordering a file or documenting an answer does not make
    old runs incomparable, while editing a label does.
    """
    # tuples are written as JSON lists, like lists; _value_ is what .value returns, without
    # the enum property's Python call on every question
    rows = sorted(
        (q.id, q.question, q.form._value_, q.hard_class, sorted(q.expected_document_ids))
        for q in golden_set.questions
    )
    payload = json.dumps(rows, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()

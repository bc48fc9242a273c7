"""Golden sets out to TREC files, to cross-check with trec_eval, ranx or ir_measures (a run's
lines: :mod:`retrieval_eval.reports.trec`).

- :func:`qrels_lines`: ``qid 0 docid grade``, one line per judged document (grade 1 for an
  ungraded target, 0 for one judged not relevant). No-result questions have no targets, so
  their judgments do not appear: TREC tools cannot express "a hit means returning nothing", and
  skip (or score zero) queries without relevant judgments.
- :func:`topics_lines`: ``qid<TAB>question`` (tabs and newlines in the text become spaces), which
  :func:`retrieval_eval.golden.importers.read_topics` reads back.

Ids with whitespace cannot be written in these formats: an error names the question.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.golden.models import GoldenQuestionSet


def qrels_lines(golden_set: GoldenQuestionSet) -> list[str]:
    lines = []
    for question in golden_set.questions:
        if question.is_no_result:
            continue
        for doc_id, grade in question.relevance.items():
            check_token(question.id, "question id", question.id)
            check_token(question.id, "document id", doc_id)
            lines.append(f"{question.id} 0 {doc_id} {grade}")
    return lines


def topics_lines(golden_set: GoldenQuestionSet) -> list[str]:
    lines = []
    for question in golden_set.questions:
        check_token(question.id, "question id", question.id)
        text = re.sub(r"[\t\r\n]", " ", question.question)  # other spacing kept as written
        lines.append(f"{question.id}\t{text}")
    return lines


def write_lines(lines: Iterable[str], path: str | Path) -> Path:
    """Write lines with a final newline, creating the folder, whole or not at all
    (:func:`retrieval_eval.safety.files.write_file`); returns the path."""
    from retrieval_eval.safety.files import write_file

    text = "\n".join(lines)
    return write_file(path, text + "\n" if text else "", make_folder=True)


def check_token(question_id: str, what: str, value: str) -> None:
    """Refuse an id (or text) a TREC file cannot hold: empty, or with whitespace."""
    if not value or any(c.isspace() for c in value):
        raise InvalidInputError(
            f"question {question_id!r}: {what} {value!r} contains whitespace, which TREC files "
            "cannot hold"
        )

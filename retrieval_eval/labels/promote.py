"""The next version of a golden set from judgments (``retrieval-eval sets promote``).

:func:`promote` takes judgment rows (a judgments file's, or the store's) and the set, merges
each (question, document) pair's grades by the documented rule
(:func:`retrieval_eval.labels.judgments.summarise`: the median, the lower middle one for an even
count) and applies the merged grades:

- grade >= 1 on a document the question does not label: a new target (``added``);
- grade 0 on a target: the target is removed (``removed``) and stays in ``grades:`` as 0;
- another grade on a target: ``regraded`` (written to ``grades:``; the target stays);
- grade 0 on a document the question does not grade: written to ``grades:`` as 0
  (``not_relevant``). A grade-0 pair stays judged in the set
  (:mod:`retrieval_eval.labels.judged`): no pool or lint offers it again once the judgments are
  gone, and it changes no figure nor the labels fingerprint;
- a row naming a new question by its text (no ``question_id``) adds that question when one of its
  documents is graded >= 1, with an id made from its text (lower case, words joined by ``-``,
  ``-2``, ``-3`` ... when taken) and form ``gap`` (a reviewer's or a user's wording, not the
  document's: lint's form check says when it is not); a text equal to an existing question's
  is that question.

Each target is listed in ``expected_document_ids`` (so a grade >= 1 counts at relevance level 1)
and its grade in ``grades:`` when it is not 1. The version is the set's plus one (an unversioned
set is version 1), and a :class:`~retrieval_eval.golden.models.ChangelogEntry` records what
changed, the raters and the date. A question whose every target is judged not relevant would
become a no-result question: :attr:`Promotion.problems` names it (``sets promote`` refuses it,
like a lint error, unless forced).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

from retrieval_eval.errors import GoldenSetError, InvalidInputError
from retrieval_eval.golden.forms import QuestionForm
from retrieval_eval.golden.models import ChangelogEntry, GoldenQuestion, GoldenQuestionSet
from retrieval_eval.labels.judgments import Judgment, Summary, summarise
from retrieval_eval.safety.limits import quote

NEW_FORM = QuestionForm.GAP
_WORDS = re.compile(r"[^a-z0-9]+")
MAX_ID = 60  # characters of a generated question id (before any -2 suffix)


@dataclass
class Promotion:
    """The next version, what changed, and what stops it (``problems``)."""

    golden: GoldenQuestionSet
    entry: ChangelogEntry
    summary: Summary
    problems: list[str] = field(default_factory=list)
    not_added: list[str] = field(default_factory=list)  # new questions without a relevant document

    @property
    def changed(self) -> bool:
        e = self.entry
        return bool(e.added or e.removed or e.regraded or e.not_relevant or e.questions_added)


def new_question_id(text: str, taken: set[str]) -> str:
    """An id for a new question from its text, not in ``taken``."""
    base = _WORDS.sub("-", text.lower()).strip("-")[:MAX_ID].strip("-") or "question"
    candidate, n = base, 1
    while candidate in taken:
        n += 1
        candidate = f"{base}-{n}"
    return candidate


def _written(question: GoldenQuestion, relevance: dict[str, int]) -> GoldenQuestion:
    """``question`` with ``relevance`` (document -> grade) as targets and grades."""
    targets = tuple(doc for doc, grade in relevance.items() if grade >= 1)
    other = {doc: grade for doc, grade in relevance.items() if grade != 1}
    return question.model_copy(update={"expected_document_ids": targets, "grades": other or None})


def promote(
    golden: GoldenQuestionSet,
    rows: Sequence[Judgment],
    *,
    relevance_level: int = 1,
    today: date | None = None,
) -> Promotion:
    """The next version of ``golden`` with the merged grades of ``rows`` applied (see the
    module docstring). A row naming a question id the set does not have is a
    :class:`GoldenSetError`, every such id named."""
    summary = summarise(rows, relevance_level)
    by_id = {q.id: q for q in golden.questions}
    by_text = {q.question: q.id for q in golden.questions}
    texts = {row.question_key: row.question for row in rows if row.question_id is None}
    unknown = sorted(
        {row.question_id for row in rows if row.question_id and row.question_id not in by_id}
    )
    if unknown:
        raise GoldenSetError(
            [
                f"judgments name question {quote(qid)}, which set {golden.identifier!r} does not "
                "have: use one of its ids, or give a new question by its text ('question', no "
                "'question_id')"
                for qid in unknown
            ]
        )
    relevance = {q.id: dict(q.relevance) for q in golden.questions}
    added: list[str] = []
    removed: list[str] = []
    regraded: list[str] = []
    not_relevant: list[str] = []
    new: dict[str, dict[str, int]] = {}  # new question text -> merged grades
    for (key, doc), grade in summary.merged.items():
        if key.startswith("text:") and key not in by_id:
            text = texts.get(key) or key.removeprefix("text:")
            if text not in by_text:
                new.setdefault(text, {})[doc] = grade
                continue
            key = by_text[text]
        grades = relevance[key]
        before = grades.get(doc)
        if before is None or before == 0:
            if grade >= 1:
                grades[doc] = grade
                added.append(f"{key}: {doc} (grade {grade})")
            elif before is None:
                grades[doc] = 0
                not_relevant.append(f"{key}: {doc}")
        elif grade == 0:
            grades[doc] = 0
            removed.append(f"{key}: {doc} (judged not relevant)")
        elif grade != before:
            grades[doc] = grade
            regraded.append(f"{key}: {doc} {before} -> {grade}")
    problems = [
        f"question {quote(q.id)}: every target was judged not relevant (grade 0), so it would "
        "become a no-result question (a hit only when nothing comes back): grade a document that "
        "answers it, or use --force if nothing in the corpus does"
        for q in golden.questions
        if q.targets() and not any(g >= 1 for g in relevance[q.id].values())
    ]
    questions = [_written(q, relevance[q.id]) for q in golden.questions]
    taken = set(by_id)
    questions_added, not_added = [], []
    for text, grades in new.items():
        if not any(g >= 1 for g in grades.values()):
            not_added.append(text)
            continue
        qid = new_question_id(text, taken)
        taken.add(qid)
        question = GoldenQuestion(id=qid, question=text, form=NEW_FORM)
        questions.append(_written(question, grades))
        questions_added.append(f"{qid}: {text}")
        added += [f"{qid}: {doc} (grade {g})" for doc, g in grades.items() if g >= 1]
        not_relevant += [f"{qid}: {doc}" for doc, g in grades.items() if g == 0]
    version = (golden.version or 1) + 1
    notes = []
    if summary.kappa is not None:
        notes.append(f"Cohen's kappa {summary.kappa:.2f}")
    if summary.alpha is not None:
        notes.append(f"Krippendorff's alpha {summary.alpha:.2f}")
    if summary.conflicts:
        notes.append(f"{len(summary.conflicts)} conflicting pair(s) merged by the median grade")
    if summary.open:
        notes.append(f"{len(summary.open)} pair(s) not graded yet")
    entry = ChangelogEntry(
        version=version,
        date=(today or date.today()).isoformat(),
        raters=tuple(summary.raters),
        added=tuple(added),
        removed=tuple(removed),
        regraded=tuple(regraded),
        not_relevant=tuple(not_relevant),
        questions_added=tuple(questions_added),
        note="; ".join(notes) or None,
    )
    promoted = golden.model_copy(
        update={
            "version": version,
            "changelog": (*golden.changelog, entry),
            "questions": tuple(questions),
        }
    )
    # validated again (ids, duplicates): what is written must load
    checked = GoldenQuestionSet.model_validate(promoted.model_dump())
    return Promotion(checked, entry, summary, problems, not_added)


class SetChangedError(InvalidInputError):
    """The set file changed between a promote's read and its write (another promote, an edit):
    exit 2, nothing written, so neither writer's judgments are lost."""


def write_promotion(
    read: GoldenQuestionSet, promoted: GoldenQuestionSet, target: Path, source: Path | None
) -> Path:
    """Write ``promoted`` (the next version of ``read``, which came from the file ``source``;
    None: not from a file) to ``target``. Over ``source`` itself only while it still holds
    ``read``, else :class:`SetChangedError`.

    Two promotes of one set at once both read version N: the check and the write are one step
    under the folder's lock (:func:`retrieval_eval.safety.files.folder_lock`), so the second one
    finds version N+1 on disk and is refused instead of writing its N+1 over the first's.
    """
    import os

    from retrieval_eval.golden.loaders import dump_golden_set, load_golden_set
    from retrieval_eval.safety.files import folder_lock

    with folder_lock(target):
        if source is not None and target.exists() and os.path.samefile(source, target):
            on_disk = load_golden_set(target, identifier=read.identifier)
            if on_disk.model_dump() != read.model_dump():
                raise SetChangedError(
                    f"{target}: set {read.identifier!r} changed since this promote read it (now "
                    f"version {on_disk.version or 1}, written by another promote or an edit): "
                    "nothing was written: run the command again to promote onto it"
                )
        return dump_golden_set(promoted, target)

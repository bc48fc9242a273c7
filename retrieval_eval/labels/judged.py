"""When a (question, document) pair is judged: the one rule pools, holes, lint and promote follow.

A pair is judged when the set holds a grade for it (a target, or a grade-0 "judged not relevant"
entry in ``grades:``) or a judgment (a judgments file, the store) grades it, 0 included; a row
without a grade (a skip, a candidate not graded yet) judges nothing. A judged pair is never
offered again (pools and lint's completeness candidates leave it out), counts as judged in the
holes figure, and ``sets promote`` keeps a grade-0 pair in the set so it stays judged once the
judgments are gone.

A model judge's grade (rater ``judge:<name>``) counts only when the judge's identity (its model,
prompt and settings) has a stored calibration on the set that passed its ``min_kappa``
(:func:`gate`, which the store applies when it reads judgments back); until then its grades stay
candidates for people. A pair a person graded keeps the person's grade: a judge's is left out.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from retrieval_eval.labels.judgments import Judgment


class Labelled(Protocol):
    """A question with its labels: a set's question or a run's question result."""

    @property
    def id(self) -> str: ...
    @property
    def expected_document_ids(self) -> tuple[str, ...]: ...
    @property
    def grades(self) -> Mapping[str, int] | None: ...


Pair = tuple[str, str]  # (question key, document id); a new question's key is "text:" + its text


def judged_pairs(*, questions: Iterable[Labelled] = (), rows: Iterable[Judgment] = ()) -> set[Pair]:
    """Every judged pair: each question's labelled and graded documents (grade 0 too), and the
    pair of every graded judgment row (any rater, any channel)."""
    found = {
        (q.id, doc) for q in questions for doc in (*q.expected_document_ids, *(q.grades or ()))
    }
    found.update((r.question_key, r.document_id) for r in rows if r.grade is not None)
    return found


MACHINE_PREFIX = "judge:"  # a model judge's rater: "judge:<name in the config>"


def is_machine(rater: str | None) -> bool:
    """Whether ``rater`` is a model judge (``judge:<name>``), not a person."""
    return rater is not None and rater.startswith(MACHINE_PREFIX)


def gate(rows: Iterable[tuple[Judgment, str | None]], trusted: Collection[str]) -> list[Judgment]:
    """The rows that may count as judged, from (row, judge identity) pairs: every person's row,
    and a model judge's only when its identity is ``trusted`` (a stored calibration passed) and
    no person graded the pair (a person's grade is never merged with, or outvoted by, a
    judge's)."""
    given = list(rows)
    by_people = {
        (row.question_key, row.document_id)
        for row, _ in given
        if row.grade is not None and not is_machine(row.rater)
    }
    return [
        row
        for row, identity in given
        if not is_machine(row.rater)
        or (identity in trusted and (row.question_key, row.document_id) not in by_people)
    ]

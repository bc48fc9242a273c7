"""Pooling (TREC): the documents to judge are the union of several retrievers' top-k.

For each question, every document in a retriever's top-``depth`` that its labels do not name
(and no judgment has graded yet) is a candidate, saying where it came from (``bm25 #2``); lint's
completeness candidates join with their check's name. Unjudged documents count as not relevant
in every hit rate, which biases against a retriever that finds what the labellers never saw: the
"holes" figure (as Elasticsearch's rank_eval ``unrated_docs``) is the share of a retriever's top
``depth`` that is unjudged, reported beside its hit rates.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from retrieval_eval.golden.judgments import Judgment
from retrieval_eval.golden.models import GoldenQuestionSet


@dataclass(frozen=True, slots=True)
class Holes:
    """How much of a retriever's top ``depth`` nobody has judged."""

    retriever: str
    depth: int
    slots: int  # ranked places looked at (at most depth per question)
    unjudged: int

    @property
    def share(self) -> float | None:
        return self.unjudged / self.slots if self.slots else None


@dataclass
class Pool:
    """Candidates per (question id, document id), with where each came from."""

    sources: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    holes: dict[str, Holes] = field(default_factory=dict)

    def add(self, question_id: str, document_id: str, source: str) -> None:
        self.sources.setdefault((question_id, document_id), []).append(source)

    def rows(self, golden: GoldenQuestionSet) -> list[Judgment]:
        """The pool as a judgments file's rows (grades empty), in the set's question order."""
        order = {q.id: i for i, q in enumerate(golden.questions)}
        texts = {q.id: q.question for q in golden.questions}
        keys = sorted(self.sources, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))
        return [
            Judgment(
                question_id=qid,
                question=texts.get(qid),
                document_id=doc,
                source=", ".join(self.sources[(qid, doc)]),
            )
            for qid, doc in keys
        ]


def judged_pairs(judgments: Iterable[Judgment]) -> set[tuple[str, str]]:
    """(question id, document id) of every graded row."""
    return {(j.question_key, j.document_id) for j in judgments if j.grade is not None}


def pool(
    golden: GoldenQuestionSet,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    depth: int = 10,
    judged: set[tuple[str, str]] | None = None,
    extra: Iterable[tuple[str, str, str]] = (),
) -> Pool:
    """Pool ``rankings`` (retriever -> question id -> distinct ids, best first) to ``depth``.

    ``judged`` pairs (graded in a judgments file) are neither candidates nor holes; ``extra``
    adds (question id, document id, source) candidates such as lint's.
    """
    judged = judged or set()
    labelled = {q.id: set(q.judged_ids) for q in golden.questions}
    result = Pool()
    for name, by_question in rankings.items():
        slots = unjudged = 0
        for question in golden.questions:
            top = list(by_question.get(question.id, ()))[:depth]
            slots += len(top)
            for rank, doc in enumerate(top, start=1):
                if doc in labelled[question.id] or (question.id, doc) in judged:
                    continue
                unjudged += 1
                result.add(question.id, doc, f"{name} #{rank}")
        result.holes[name] = Holes(name, depth, slots, unjudged)
    for qid, doc, source in extra:
        if qid in labelled and doc not in labelled[qid] and (qid, doc) not in judged:
            result.add(qid, doc, source)
    return result

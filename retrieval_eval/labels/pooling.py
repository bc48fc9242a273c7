"""Pooling (TREC): the documents to judge are the union of several retrievers' top-k.

For each question, every document in a retriever's top-``depth`` that is not judged
(:mod:`retrieval_eval.labels.judged`: the set grades it, 0 included, or a judgment does) is a
candidate, saying where it came from (``bm25 #2``); lint's
completeness candidates join with their check's name (:func:`retrieval_eval.lint.completeness.
pool_candidates`), and a replay's most-changed queries (new
questions, keyed by their text) with the documents of both rankings. Unjudged documents count as
not relevant in every hit rate, which biases against a retriever that finds what the labellers
never saw: the "holes" figure (as Elasticsearch's rank_eval ``unrated_docs``) is the share of a
retriever's top ``depth`` that is unjudged, reported beside its hit rates (``sets pool``,
``compare``, ``run``). A run keeps its rankings only to its own deepest depth, so a run kept to
top 3 has its holes counted at 3 (``Holes.depth`` says which).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from retrieval_eval.labels.judged import Pair, judged_pairs

if TYPE_CHECKING:
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.golden.models import GoldenQuestionSet
    from retrieval_eval.labels.judgments import Judgment

DEPTH = 10  # `sets pool --depth` and the holes figure of `compare` and `run`
TEXT_CHARS = 500  # a candidate's text in a judgments file: its first characters, cut at a word
NEW_QUESTION = "text:"  # the key of a question that is not in the set: Judgment.question_key


@dataclass(frozen=True, slots=True)
class Holes:
    """How much of a retriever's top ``depth`` nobody has judged."""

    retriever: str
    depth: int  # the depth counted: the one asked, or a shallower one the run kept
    slots: int  # ranked places looked at (at most depth per question)
    unjudged: int

    @property
    def share(self) -> float | None:
        return self.unjudged / self.slots if self.slots else None


def count_holes(
    retriever: str,
    depth: int,
    ranked: Iterable[tuple[str, Sequence[str]]],
    judged: Collection[Pair],
) -> tuple[Holes, list[tuple[str, str, int]]]:
    """The holes of ``ranked`` (question id, distinct ids best first) in the top ``depth``: the
    places whose pair is not ``judged``, and those (question id, document id, rank) themselves."""
    slots = 0
    found: list[tuple[str, str, int]] = []
    for question_id, ranking in ranked:
        top = list(ranking)[:depth]
        slots += len(top)
        found.extend(
            (question_id, doc, rank)
            for rank, doc in enumerate(top, start=1)
            if (question_id, doc) not in judged
        )
    return Holes(retriever, depth, slots, len(found)), found


def run_holes(result: RunResult, depth: int = DEPTH, judgments: Iterable[Judgment] = ()) -> Holes:
    """A run's holes at ``depth`` or the shallower depth it kept: judged are the labels it was
    scored against (grade 0 too) and the graded ``judgments`` (the store's)."""
    kept = min(depth, result.settings.depth)
    judged = judged_pairs(questions=result.questions, rows=judgments)
    ranked = ((q.id, q.retrieved) for q in result.questions)
    return count_holes(result.retriever, kept, ranked, judged)[0]


@dataclass
class Pool:
    """Candidates per (question key, document id), with where each came from."""

    sources: dict[tuple[str, str], list[str]] = field(default_factory=dict)
    holes: dict[str, Holes] = field(default_factory=dict)

    def add(self, question_key: str, document_id: str, source: str) -> None:
        self.sources.setdefault((question_key, document_id), []).append(source)

    def questions(self) -> int:
        return len({key for key, _ in self.sources})

    def rows(
        self, golden: GoldenQuestionSet, texts: Mapping[str, str] | None = None
    ) -> list[Judgment]:
        """The pool as a judgments file's rows (grades empty), in the set's question order, then
        the new questions; with ``texts`` (document id -> text) each row carries its document's
        text, cut to :data:`TEXT_CHARS` (:func:`excerpt`)."""
        from retrieval_eval.labels.judgments import Judgment  # pydantic: not at CLI start

        order = {q.id: i for i, q in enumerate(golden.questions)}
        asked = {q.id: q.question for q in golden.questions}
        keys = sorted(self.sources, key=lambda k: (order.get(k[0], len(order)), k[0], k[1]))
        texts = texts or {}
        rows = []
        for key, doc in keys:
            new = key not in asked and key.startswith(NEW_QUESTION)
            text = texts.get(doc)
            rows.append(
                Judgment(
                    question_id=None if new else key,
                    question=key.removeprefix(NEW_QUESTION) if new else asked.get(key),
                    document_id=doc,
                    source=", ".join(self.sources[(key, doc)]),
                    text=excerpt(text) if text else None,
                )
            )
        return rows


def excerpt(text: str, limit: int = TEXT_CHARS) -> str:
    """``text`` with its whitespace runs made one space, cut at a word before ``limit``
    characters with `` …`` appended when it was longer."""
    flat = " ".join(text.split())
    if len(flat) <= limit:
        return flat
    cut = flat[: limit - 2]
    head = cut.rsplit(" ", 1)[0] if " " in cut else cut
    return head + " …"


def pool(
    golden: GoldenQuestionSet,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    depth: int = DEPTH,
    judged: Collection[Pair] = (),
    extra: Iterable[tuple[str, str, str]] = (),
    kept: Mapping[str, int] | None = None,
) -> Pool:
    """Pool ``rankings`` (retriever -> question id -> distinct ids, best first) to ``depth``.

    Judged pairs (:func:`~retrieval_eval.labels.judged.judged_pairs`: the set's grades and the
    ``judged`` pairs of judgments files and the store) are neither candidates nor holes; ``extra``
    adds (question key, document id, source) candidates such as lint's and a replay's (a key
    not in the set is a new question's, ``text:`` and its text); ``kept`` names retrievers
    whose rankings stop at a shallower depth (a stored run's), counted at that depth.
    """
    every = judged_pairs(questions=golden.questions) | set(judged)
    asked = {q.id for q in golden.questions}
    result = Pool()
    for name, by_question in rankings.items():
        at = min(depth, (kept or {}).get(name, depth))
        ranked = ((q.id, by_question.get(q.id, ())) for q in golden.questions)
        result.holes[name], found = count_holes(name, at, ranked, every)
        for qid, doc, rank in found:
            result.add(qid, doc, f"{name} #{rank}")
    for key, doc, source in extra:
        known = key in asked or key.startswith(NEW_QUESTION)
        if known and (key, doc) not in every:
            result.add(key, doc, source)
    return result


def verdict_flips(
    golden: GoldenQuestionSet,
    rankings: Mapping[str, Mapping[str, Sequence[str]]],
    depths: Mapping[str, Sequence[int]],
    level: int = 1,
) -> set[Pair]:
    """The pairs whose grade would flip a verdict: those that decide whether a question is a
    hit at a gated depth of a run, so the review queue puts them first.

    ``rankings``: retriever -> question id -> distinct ids, best first, of each retriever's
    newest run; ``depths``: the depths that run gates. A pair (question, document) is one when,
    at some gated depth ``k`` of some run, the document sits in the question's top ``k`` and no
    target of the set (grade ``>= level``) does: above the question's first target, or the
    question has no hit there. Graded relevant, that question becomes a hit at ``k``; not
    relevant, it stays a miss. Targets themselves are left out, and so are questions that
    expect nothing (a hit when nothing comes back: no grade of one document decides it).
    """
    targets = {q.id: set(q.targets(level)) for q in golden.questions}
    found: set[Pair] = set()
    for name, by_question in rankings.items():
        for qid, relevant in targets.items():
            ranked = by_question.get(qid, ())
            if not relevant or not ranked:
                continue
            # how many documents sit above the first target (all of them: no target found)
            above = next((i for i, doc in enumerate(ranked) if doc in relevant), None)
            gated = depths.get(name, ())
            deepest = max((k for k in gated if above is None or k <= above), default=0)
            found.update((qid, doc) for doc in ranked[:deepest])
    return found


def replay_candidates(
    rows: Iterable[Mapping[str, object]], golden: GoldenQuestionSet
) -> list[tuple[str, str, str]]:
    """(question key, document id, source) of a replay's draft rows
    (:func:`retrieval_eval.replay.draft.draft_rows`) whose query is not already a question of the
    set (same text, case and spacing aside): those are labelled already."""
    known = {" ".join(q.question.casefold().split()) for q in golden.questions}
    found = []
    for row in rows:
        text = str(row["question"])
        if " ".join(text.casefold().split()) not in known:
            found.append((NEW_QUESTION + text, str(row["document_id"]), str(row["source"])))
    return found

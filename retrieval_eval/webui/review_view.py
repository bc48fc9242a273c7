"""The review queue: per set, the questions with open candidates, for people to grade.

Candidates are what :func:`retrieval_eval.labels.pooling.pool` gathers: the unlabelled documents
in the top ``depth`` of the latest stored run of every retriever on the set, and lint's
completeness candidates (near duplicates of a target, from the corpus of a retriever the config
knows, as ``sets lint --retriever`` finds them). A candidate is open until ``review:
raters_per_pair`` people (1 by default), each a different rater, have graded it (a model judge's
grade, ``rater = judge:<name>``, never closes one); a rater's own grade or skip hides it from
that rater's queue. Each candidate shows its text where the retriever offers
``document_texts(ids)`` (else the corpus lint read), cut to :data:`TEXT_CHARS`, beside the texts
of the question's current labels.

The queue is ordered by value (:func:`priority`): first the pairs whose grade would flip a
verdict (:func:`retrieval_eval.labels.pooling.verdict_flips`: in a newest run's top ``k`` at a
gated depth, above the question's first target or where it has none), then the pairs where a
model judge and a person disagree (on both sides of the relevance level), then those a model
graded unsure (model judges split across the level, or the weakest grade that still counts as
relevant: the judges give no confidence of their own), then the rest; questions by their most
valuable candidate. People's grades of an open pair stay hidden (each rater grades blind; the page says how
many have graded), and the raters' agreement over the pairs several graded is shown
(:func:`retrieval_eval.labels.judgments.summarise`: Cohen's κ for two raters, Krippendorff's α).

What does not change between requests (the set's lint candidates and the candidates' texts) is
built once per version of the set and runs (:class:`ReviewSource`; the config and its sets are
read again when their files change, :class:`~retrieval_eval.webui.source.ConfigSource`, so a
promoted set shows at once); the store's judgments are read on every request, so a grade leaves
the queue at once.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from retrieval_eval.labels.agreement import MERGE_RULE
from retrieval_eval.labels.machine import is_machine

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.golden.models import GoldenQuestionSet
    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.labels.pooling import Pool
    from retrieval_eval.store import Store

log = logging.getLogger(__name__)

DEPTH = 10  # a retriever's top-k pooled, as ``sets pool`` defaults to
PAGE = 20  # questions per page
TEXT_CHARS = 1_500  # a candidate's text shown, at most
GRADES = {0: "not relevant", 1: "relevant", 2: "highly relevant", 3: "perfect"}


PRIORITIES = {
    "flip": "its grade decides whether a question is a hit at a gated depth",
    "disagreement": "a model judge and a person disagree",
    "unsure": "a model judge is unsure",
    "open": "not graded yet by enough people",
}


class Candidate(BaseModel):
    document_id: str
    sources: list[str]  # "handbook_bm25 #2", "label_completeness (82% like x.md)"
    text: str | None = None
    text_cut: bool = False
    priority: str = "open"  # a key of PRIORITIES: why it is where it is in the queue
    people_graded: int = 0  # how many people graded it so far (their grades stay hidden)
    model_graded: bool = False  # whether a model judge graded it


class LabelText(BaseModel):
    document_id: str
    text: str | None = None
    text_cut: bool = False


class ReviewQuestion(BaseModel):
    id: str
    question: str
    labels: list[str]  # the set's expected document ids
    label_texts: list[LabelText] = Field(default_factory=list)  # their texts, to compare with
    graded: dict[str, int] = Field(default_factory=dict)  # judged documents: merged grade
    candidates: list[Candidate]


class Agreement(BaseModel):
    """How far the people who graded this set agree (over the pairs two or more graded)."""

    raters: list[str]
    shared_pairs: int
    kappa: float | None  # two raters: Cohen's κ, quadratic weights
    alpha: float | None  # Krippendorff's α, ordinal
    conflicts: int  # pairs graded more than one apart, or on both sides of the relevance level


class ReviewQueue(BaseModel):
    """The queue of one set, as the page shows it to the signed-in user."""

    set_identifier: str
    set_version: int  # the set file's version as read now (1: never promoted)
    set_questions: int  # questions in the set as read now
    depth: int
    retrievers: list[str]  # whose latest stored runs were pooled
    lint: str  # "label_completeness candidates from R's corpus", or why there are none
    open_candidates: int
    open_questions: int
    page: int
    pages: int
    questions: list[ReviewQuestion]
    grades: dict[int, str] = Field(default_factory=lambda: dict(GRADES))
    merge_rule: str = MERGE_RULE
    raters_per_pair: int = 1
    priorities: dict[str, str] = Field(default_factory=lambda: dict(PRIORITIES))
    agreement: Agreement | None = None
    rater: str | None  # the signed-in user, who grades as themself
    can_edit: bool
    csrf_token: str | None = None  # what a POST must send back (only to users who may edit)


@dataclass(frozen=True, slots=True)
class _Ingredients:
    """What the queue of one set needs besides the store's judgments."""

    golden: GoldenQuestionSet
    rankings: dict[str, dict[str, list[str]]]
    flips: set[tuple[str, str]]  # pairs whose grade would flip a verdict (labels.pooling)
    extra: list[tuple[str, str, str]]
    texts: dict[str, str]
    lint: str


class ReviewSource:
    """The config (sets, retrievers) and a cache of each set's ingredients; thread-safe."""

    def __init__(self, config_path: str | Path | None = None) -> None:
        from retrieval_eval.webui.source import ConfigSource

        self._configs = ConfigSource(config_path)
        self._cache: dict[tuple[str, int, tuple[int, ...], int], _Ingredients] = {}
        self._lock = threading.Lock()

    def config(self) -> Config:
        """The config as its files are now (a promoted set is read again)."""
        return self._configs.config()

    def ingredients(self, store: Store | None, set_identifier: str, depth: int) -> _Ingredients:
        golden = self.config().golden_sets.get(set_identifier)  # unknown: UnknownNameError, 404
        runs = _latest_runs(store, golden) if store is not None else {}
        # the set as loaded now (an entry holds it, so its id is not reused while cached): a
        # promotion that changes no fingerprint (grade-0 judgments) is a new set all the same
        key = (set_identifier, id(golden), tuple(sorted(runs.values())), depth)
        with self._lock:
            found = self._cache.get(key)
            if found is None:
                for stale in [k for k in self._cache if k[0] == set_identifier and k[3] == depth]:
                    del self._cache[stale]
                found = self._cache[key] = self._build(store, golden, runs, depth)
            return found

    def _build(
        self, store: Store | None, golden: GoldenQuestionSet, runs: Mapping[str, int], depth: int
    ) -> _Ingredients:
        from retrieval_eval.labels.pooling import pool, verdict_flips

        rankings: dict[str, dict[str, list[str]]] = {}
        depths: dict[str, list[int]] = {}
        for name, run_id in runs.items():
            assert store is not None
            result = store.runs.get(run_id).result
            rankings[name] = {q.id: list(q.retrieved) for q in result.questions}
            depths[name] = list(result.depths)
        level = self.config().run.relevance_level
        flips = verdict_flips(golden, rankings, depths, level)
        extra, corpus_texts, lint = self._lint_candidates(golden, list(runs))
        every = pool(golden, rankings, depth, extra=extra)
        wanted = {doc for _, doc in every.sources}
        wanted |= {doc for q in golden.questions for doc in q.targets()}  # shown beside them
        texts = self._texts(list(runs), wanted, corpus_texts)
        return _Ingredients(golden, rankings, flips, extra, texts, lint)

    def _known(self, names: list[str]) -> list[str]:
        known = set(self.config().retriever_registry.names())
        return [name for name in names if name in known]

    def _lint_candidates(
        self, golden: GoldenQuestionSet, names: list[str]
    ) -> tuple[list[tuple[str, str, str]], dict[str, str], str]:
        """Lint's completeness candidates from the corpus of the first retriever that has one
        (``sets lint --retriever R``), and that corpus's texts."""
        from retrieval_eval.lint import run_lint
        from retrieval_eval.lint.completeness import CHECK
        from retrieval_eval.lint.run import corpus_path
        from retrieval_eval.retrievers.corpus import beir_corpus_file, read_corpus
        from retrieval_eval.workflows.labelled_run import opened_retriever

        config = self.config()
        for name in self._known(names):
            try:
                with opened_retriever(config, name) as retriever:
                    path = corpus_path(retriever)
                    if path is None:
                        continue
                    report = run_lint(golden, retriever=retriever, options=config.lint)
            except Exception:  # a retriever that cannot be built here gives no candidates
                log.warning("review queue: lint with retriever %s failed", name, exc_info=True)
                continue
            if CHECK in report.checks_skipped:
                return [], {}, f"no lint candidates: {report.checks_skipped[CHECK]}"
            extra = [
                (f.question_ids[0], doc, f"{CHECK} ({float(c['jaccard']):.0%} like "
                 f"{c['similar_to']})")
                for f in report.findings
                if f.check == CHECK
                for doc, c in f.details["candidates"].items()
            ]  # fmt: skip
            documents = read_corpus(beir_corpus_file(path))
            return extra, {d.id: d.content for d in documents}, f"{CHECK} from {name}'s corpus"
        return [], {}, "no lint candidates: no retriever of the config with a corpus has runs here"

    def _texts(self, names: list[str], ids: set[str], corpus: dict[str, str]) -> dict[str, str]:
        """Each candidate's text: from a retriever's ``document_texts`` where it offers it,
        else from the corpus lint read."""
        from retrieval_eval.workflows.labelled_run import opened_retriever

        texts = {doc: corpus[doc] for doc in ids if doc in corpus}
        for name in self._known(names):
            missing = ids - texts.keys()
            if not missing:
                break
            try:
                with opened_retriever(self.config(), name) as retriever:
                    lookup = getattr(retriever, "document_texts", None)
                    if lookup is not None:
                        texts.update(lookup(sorted(missing)))
            except Exception:
                log.warning("review queue: document_texts of %s failed", name, exc_info=True)
        return texts


def _latest_runs(store: Store, golden: GoldenQuestionSet) -> dict[str, int]:
    """Each retriever's newest valid stored run of the set (under any labels: its rankings are
    pooled against the current ones)."""
    found = {}
    for name in store.runs.retrievers_for(golden.identifier):
        for run in store.runs.history(golden.identifier, name, limit=20, questions=False):
            if run.status == "valid":
                found[name] = run.id
                break
    return found


Pair = tuple[str, str]


def people_by_pair(rows: list[Judgment]) -> dict[Pair, dict[str, int]]:
    """Each pair's grades by person (a rater's latest; model judges and skips left out)."""
    found: dict[Pair, dict[str, int]] = {}
    for r in rows:
        if r.grade is not None and not is_machine(r.rater):
            found.setdefault((r.question_key, r.document_id), {})[r.rater or "anonymous"] = r.grade
    return found


def open_pool(
    source: ReviewSource, store: Store | None, set_identifier: str, depth: int, rater: str | None
) -> tuple[_Ingredients, Pool, list[Judgment]]:
    """The set's open candidates for ``rater`` and the stored rows (skips included): a pair is
    closed once ``review.raters_per_pair`` people graded it, and for ``rater`` once they
    graded or skipped it."""
    from retrieval_eval.labels.pooling import pool

    parts = source.ingredients(store, set_identifier, depth)
    rows = (
        store.judgments.read(set_identifier, skips=True, gated=False) if store is not None else []
    )
    need = source.config().review.raters_per_pair
    done = {pair for pair, people in people_by_pair(rows).items() if len(people) >= need}
    mine = {
        (r.question_key, r.document_id)
        for r in rows
        if r.rater == rater and rater is not None and not is_machine(r.rater)
    }
    return parts, pool(parts.golden, parts.rankings, depth, done | mine, parts.extra), rows


def priority(
    people: dict[str, int], models: dict[str, int], level: int, *, flips: bool = False
) -> str:
    """Why a pair is where it is in the queue (a key of :data:`PRIORITIES`): its grade would
    flip a verdict (``flips``, :func:`retrieval_eval.labels.pooling.verdict_flips`); a model
    and a person on both sides of ``level``; a model unsure (model judges split across it, or
    at the weakest relevant grade); else open."""
    if flips:
        return "flip"
    if people and models:
        grades = [*people.values(), *models.values()]
        if min(grades) < level <= max(grades):
            return "disagreement"
    if models:
        values = sorted(models.values())
        if values[0] < level <= values[-1] or values[(len(values) - 1) // 2] == level:
            return "unsure"
    return "open"


class NoLongerQueued(Exception):
    """A candidate of the set that left the rater's queue since the page was loaded: graded
    (by any rater) or skipped by this one. Storing a second grade would be a silent overwrite
    of the merged grade the rater never saw (a 409)."""


def candidate_source(
    source: ReviewSource,
    store: Store | None,
    set_identifier: str,
    question_id: str,
    document_id: str,
    rater: str | None = None,
) -> str | None:
    """Where a (question, document) candidate came from, or None when it is no candidate of
    the set's queue (the only pairs the dashboard lets anyone grade); :class:`NoLongerQueued`
    when it is one but ``rater``'s queue no longer holds it."""
    from retrieval_eval.labels.pooling import pool

    parts, still_open, _ = open_pool(source, store, set_identifier, DEPTH, rater)
    pair = (question_id, document_id)
    if (sources := still_open.sources.get(pair)) is not None:
        return ", ".join(sources)
    every = pool(parts.golden, parts.rankings, DEPTH, extra=parts.extra)
    if pair in every.sources:
        raise NoLongerQueued
    return None


def review_queue(
    source: ReviewSource,
    store: Store | None,
    set_identifier: str,
    page: int,
    *,
    rater: str | None,
    can_edit: bool,
    csrf_token: str | None,
) -> ReviewQueue:
    """The page ``page`` of a set's queue as ``rater`` sees it."""
    from retrieval_eval.labels.judgments import summarise

    parts, found, rows = open_pool(source, store, set_identifier, DEPTH, rater)
    config = source.config()
    level = config.run.relevance_level
    people = people_by_pair(rows)
    models: dict[Pair, dict[str, int]] = {}
    for r in rows:
        if r.grade is not None and is_machine(r.rater):
            models.setdefault((r.question_key, r.document_id), {})[str(r.rater)] = r.grade
    order = list(PRIORITIES)
    by_question: dict[str, list[Candidate]] = {}
    for (qid, doc), where in found.sources.items():
        text = parts.texts.get(doc)
        by_people, by_models = people.get((qid, doc), {}), models.get((qid, doc), {})
        by_question.setdefault(qid, []).append(
            Candidate(
                document_id=doc,
                sources=where,
                text=None if text is None else text[:TEXT_CHARS],
                text_cut=text is not None and len(text) > TEXT_CHARS,
                priority=priority(by_people, by_models, level, flips=(qid, doc) in parts.flips),
                people_graded=len(by_people),
                model_graded=bool(by_models),
            )
        )
    for candidates in by_question.values():
        candidates.sort(key=lambda c: (order.index(c.priority), c.document_id))
    position = {q.id: i for i, q in enumerate(parts.golden.questions)}
    questions = sorted(
        (q for q in parts.golden.questions if q.id in by_question),
        key=lambda q: (order.index(by_question[q.id][0].priority), position[q.id]),
    )
    pages = max(1, -(-len(questions) // PAGE))
    shown = questions[(min(page, pages) - 1) * PAGE : min(page, pages) * PAGE]
    summary = summarise([r for r in rows if not is_machine(r.rater)], level)
    graded: dict[str, dict[str, int]] = {}
    for (qkey, doc), grade in summary.merged.items():
        if (qkey, doc) not in found.sources:  # an open pair's grades stay hidden: grade blind
            graded.setdefault(qkey, {})[doc] = grade
    return ReviewQueue(
        set_identifier=set_identifier,
        set_version=parts.golden.version or 1,
        set_questions=len(parts.golden.questions),
        depth=DEPTH,
        retrievers=sorted(parts.rankings),
        lint=parts.lint,
        open_candidates=sum(len(c) for c in by_question.values()),
        open_questions=len(questions),
        page=min(page, pages),
        pages=pages,
        questions=[
            ReviewQuestion(
                id=q.id,
                question=q.question,
                labels=list(q.targets()),
                label_texts=[_label_text(doc, parts.texts.get(doc)) for doc in q.targets()],
                graded=graded.get(q.id, {}),
                candidates=by_question[q.id],
            )
            for q in shown
        ],
        raters_per_pair=config.review.raters_per_pair,
        agreement=Agreement(
            raters=summary.raters,
            shared_pairs=summary.shared,
            kappa=summary.kappa,
            alpha=summary.alpha,
            conflicts=len(summary.conflicts),
        ),
        rater=rater,
        can_edit=can_edit,
        csrf_token=csrf_token if can_edit else None,
    )


def _label_text(doc: str, text: str | None) -> LabelText:
    return LabelText(
        document_id=doc,
        text=None if text is None else text[:TEXT_CHARS],
        text_cut=text is not None and len(text) > TEXT_CHARS,
    )

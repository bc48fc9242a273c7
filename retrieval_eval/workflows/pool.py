"""Pooling as a workflow (``sets pool``; the labelling DAG's pool step): the documents to judge.

plan: the set and the judgments files checked, the store opened (a missing one is an error unless
``fresh``: nothing stored to leave out), the work split into batches of questions × retrievers;
execute: one batch's rankings, per retriever its latest stored run's (the store only read) or,
with ``fresh``, retrieved now at the pool's depth by the run pipeline's scoring and NOT saved:
pooling is a step of labelling, and a run saved at another depth than the nightly one would sit
in the history beside them; reduce: the rankings joined, then pooled
(:mod:`retrieval_eval.labels.pooling`) with lint's completeness candidates (``corpus``, else the
corpus of the first retriever that has one), a stored replay's most-changed queries
(:func:`retrieval_eval.workflows.replay.stored_record`) and the texts of every candidate from
the retrievers that offer ``document_texts`` (each asked once, for the ids still without a
text); record: the rows written to ``output`` (JSONL or CSV by its suffix) when the job names
one. A retriever with no stored run on the set is an error naming what is stored and suggesting
``--fresh``. What could not be done (no corpus, a retriever the config does not build, a text
lookup that failed) is a note, not an error: the candidates found stand.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager, nullcontext
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import BaseModel, ConfigDict

from retrieval_eval.errors import InvalidInputError, NoStoreError, UnknownNameError
from retrieval_eval.evaluation.results import QuestionResult, RunResult
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.labels.judged import judged_pairs
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.labels.pooling import DEPTH, pool, replay_candidates
from retrieval_eval.workflows.base import Workflow, register

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config, RunSettings
    from retrieval_eval.store import Store

FRESH_ORIGIN = "a fresh run, not saved"


class PoolJob(BaseModel):
    """What to pool: the set, the retrievers and where their rankings come from, what joins
    them, and where the rows go (``output``; None: only in the outcome). JSON-able, so a DAG
    task rebuilds the workflow from it; ``db`` is ``--db`` as given (None: the config's store)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    config_path: str | None = None
    db: str | None = None
    set: str
    retrievers: list[str]
    depth: int = DEPTH
    fresh: bool = False
    judgments_files: list[str] = []
    corpus: str | None = None
    lint: bool = True
    replay_id: int | None = None
    most: int = 50
    texts: bool = True
    captured_text: bool = False
    output: str | None = None
    max_batches: int = 1


class PoolBatch(BaseModel):
    """Questions ``[start, stop)`` of the set (labels ``fingerprint`` when planned), for
    ``retrievers``."""

    retrievers: list[str]
    start: int
    stop: int
    fingerprint: str


class Ranked(BaseModel):
    """One retriever's rankings of a batch: a stored run's (``result``, the whole run) or, for a
    fresh one, the batch's question results (``questions``) under the retriever's identifier."""

    name: str
    origin: str  # "run 12 (2026-11-30 02:00)" or FRESH_ORIGIN
    identifier: str | None = None
    questions: list[QuestionResult] = []
    result: RunResult | None = None


class PoolPart(BaseModel):
    ranked: list[Ranked]


class Pooled(BaseModel):
    """One retriever as pooled: where its rankings came from, its hit rates and its holes."""

    name: str
    origin: str
    top1_hit_rate: float | None
    top3_hit_rate: float | None
    holes_depth: int
    holes_slots: int
    holes_unjudged: int

    @property
    def holes_share(self) -> float | None:
        return self.holes_unjudged / self.holes_slots if self.holes_slots else None


class PoolReduced(BaseModel):
    """The pool's rows (a judgments file's, grades empty), per retriever its figures, how many
    questions have candidates, and what could not be done."""

    set_identifier: str
    questions: int
    rows: list[Judgment]
    pooled: list[Pooled]
    notes: list[str] = []


class PoolOutcome(PoolReduced):
    written: str | None = None  # the file the rows went to (None: none asked)


@register
class PoolWorkflow(Workflow[PoolJob, PoolBatch, PoolPart, PoolReduced, PoolOutcome]):
    """plan (set, files, store; batches) → execute (rankings, nothing stored) → reduce (the
    pool, its texts and notes) → record (the rows file)."""

    name: ClassVar[str] = "pool"
    job_type = PoolJob
    batch_type = PoolBatch
    part_type = PoolPart
    reduced_type = PoolReduced
    outcome_type = PoolOutcome

    def __init__(self, job: PoolJob, *, config: Config | None = None) -> None:
        super().__init__(job)
        self._config = config

    @cached_property
    def config(self) -> Config:
        from retrieval_eval.config.models import load_config

        return self._config if self._config is not None else load_config(self.job.config_path)

    @cached_property
    def golden(self) -> GoldenQuestionSet:
        from retrieval_eval.workflows.labelled_run import resolve_set

        return resolve_set(self.config, self.job.set)

    @cached_property
    def given_judgments(self) -> list[Judgment]:
        """The judgments files' rows: their graded pairs are judged, as the store's are."""
        from retrieval_eval.labels.judgments import read_judgments

        return [row for file in self.job.judgments_files for row in read_judgments(Path(file))]

    @contextmanager
    def _store(self) -> Iterator[Store | None]:
        """The store, only read; none (None) is an error unless the rankings are fresh and no
        replay is asked for: then there is no stored judgment to leave out."""
        from retrieval_eval.store import resolve_store_url
        from retrieval_eval.store.store import open_store_to_read

        try:
            opened: Any = open_store_to_read(resolve_store_url(self.job.db, self.config))
        except NoStoreError as exc:
            if self.job.replay_id is not None:
                raise
            if not self.job.fresh:
                raise NoStoreError(
                    f"{exc}; or pool runs made now with --fresh (not saved)"
                ) from None
            opened = nullcontext()
        with opened as store:
            yield store

    def _settings(self, name: str) -> RunSettings:
        """The retriever's run settings, its rankings kept to the pool's depth at least."""
        from retrieval_eval.workflows.labelled_run import resolve_settings

        settings = resolve_settings(self.config, self.golden.identifier, name)
        cutoffs = sorted({*settings.cutoffs, self.job.depth})
        return settings.model_copy(update={"cutoffs": cutoffs})

    def plan(self, max_batches: int = 1) -> list[PoolBatch]:
        """Check the set, the judgments files and the store, in that order; then one batch per
        retriever's share of the questions (fresh rankings) or per retriever (stored runs), at
        most ``max_batches`` (and the job's): one batch holds every retriever when fewer."""
        golden = self.golden
        self.given_judgments  # noqa: B018  a bad file fails the plan, naming its line
        with self._store():
            pass
        count = len(golden.questions)
        names = list(self.job.retrievers)
        wanted = min(max_batches, self.job.max_batches)
        if wanted < len(names) or count == 0:
            return [
                PoolBatch(retrievers=names, start=0, stop=count, fingerprint=golden.fingerprint)
            ]
        per = max(1, min(count, wanted // len(names))) if self.job.fresh else 1
        size = math.ceil(count / per)
        return [
            PoolBatch(
                retrievers=[name],
                start=start,
                stop=min(count, start + size),
                fingerprint=golden.fingerprint,
            )
            for name in names
            for start in range(0, count, size)
        ]

    def execute(self, batch: PoolBatch) -> PoolPart:
        """The batch's rankings: read from the retrievers' latest stored runs, or retrieved now
        (opened, scored at the pool's depth, closed); nothing is stored."""
        golden = self.golden
        if golden.fingerprint != batch.fingerprint:
            raise InvalidInputError(
                f"golden set {golden.identifier!r} changed while it was being pooled (labels "
                "fingerprint differs); pool it again"
            )
        if not self.job.fresh:
            with self._store() as store:
                assert store is not None
                return PoolPart(
                    ranked=[_stored(store, golden.identifier, n) for n in batch.retrievers]
                )
        from retrieval_eval.evaluation.scoring import score_questions
        from retrieval_eval.workflows.labelled_run import opened_retriever

        ranked = []
        questions = golden.questions[batch.start : batch.stop]
        for name in batch.retrievers:
            with opened_retriever(self.config, name) as retriever:
                results = score_questions(questions, retriever, self._settings(name))
                ranked.append(
                    Ranked(
                        name=name,
                        origin=FRESH_ORIGIN,
                        identifier=retriever.identifier,
                        questions=results,
                    )
                )
        return PoolPart(ranked=ranked)

    def reduce(self, parts: Sequence[PoolPart]) -> PoolReduced:
        """Each retriever's rankings joined (plan order), pooled with lint's and the replay's
        candidates, the candidates' texts looked up; the pairs the files and the store grade are
        judged: neither candidates nor holes."""
        golden = self.golden
        results = self._results(parts)
        judgments = list(self.given_judgments)
        notes: list[str] = []
        with self._store() as store:
            if store is not None:
                judgments += store.judgments.read(golden.identifier)
            with ExitStack() as stack:
                opened = self._opened(stack, notes)
                extra: list[tuple[str, str, str]] = []
                if self.job.lint:
                    corpus = Path(self.job.corpus) if self.job.corpus else None
                    extra.extend(
                        _lint_candidates(self.config, golden, corpus, opened, notes, judgments)
                    )
                if self.job.replay_id is not None:
                    assert store is not None
                    extra.extend(self._replay_candidates(store))
                kept = {name: result.settings.depth for name, (_, result) in results.items()}
                depth = self.job.depth
                for name, (origin, _) in results.items():
                    if kept[name] < depth:
                        notes.append(
                            f"{name}: {origin} kept its rankings to top {kept[name]} only: its "
                            f"candidates and holes are counted at {kept[name]}; pool a run made now "
                            f"with --fresh, or keep top {depth} in runs (`run --cutoffs 1,3,{depth}`, run.cutoffs)"
                        )
                found = pool(
                    golden,
                    {
                        name: {q.id: list(q.retrieved) for q in result.questions}
                        for name, (_, result) in results.items()
                    },
                    depth,
                    judged_pairs(rows=judgments),
                    extra,
                    kept,
                )
                ids = sorted({doc for _, doc in found.sources})
                texts = _texts(opened, ids, notes) if self.job.texts else {}
        pooled = []
        for name, (origin, result) in results.items():
            holes = found.holes[name]
            pooled.append(
                Pooled(
                    name=name,
                    origin=origin,
                    top1_hit_rate=result.top1_hit_rate,
                    top3_hit_rate=result.top3_hit_rate,
                    holes_depth=holes.depth,
                    holes_slots=holes.slots,
                    holes_unjudged=holes.unjudged,
                )
            )
        return PoolReduced(
            set_identifier=golden.identifier,
            questions=found.questions(),
            rows=found.rows(golden, texts),
            pooled=pooled,
            notes=notes,
        )

    def record(self, reduced: PoolReduced) -> PoolOutcome:
        """Write the rows to the job's ``output`` (whole or not at all), if it names one."""
        if self.job.output is not None:
            from retrieval_eval.labels.judgments import write_judgments

            write_judgments(reduced.rows, Path(self.job.output))
        return PoolOutcome(**dict(reduced), written=self.job.output)

    def _results(self, parts: Sequence[PoolPart]) -> dict[str, tuple[str, RunResult]]:
        """Per retriever (the job's order), where its rankings came from and its run: a stored
        run as stored, a fresh one's batches summarised as one run."""
        from retrieval_eval.evaluation.scoring import summarise_set

        stored: dict[str, tuple[str, RunResult]] = {}
        fresh: dict[str, list[Ranked]] = {}
        for part in parts:
            for ranked in part.ranked:
                if ranked.result is not None:
                    stored[ranked.name] = (ranked.origin, ranked.result)
                else:
                    fresh.setdefault(ranked.name, []).append(ranked)
        for name, pieces in fresh.items():
            questions = [q for piece in pieces for q in piece.questions]
            result = summarise_set(
                self.golden,
                questions,
                retriever=pieces[0].identifier or name,
                settings=self._settings(name),
            )
            stored[name] = (FRESH_ORIGIN, result)
        return {name: stored[name] for name in self.job.retrievers if name in stored}

    def _opened(self, stack: ExitStack, notes: list[str]) -> dict[str, Any]:
        """The retrievers opened for texts and lint's corpus (each closed with ``stack``); one
        the config does not build is a note when its rankings were stored."""
        from retrieval_eval.workflows.labelled_run import opened_retriever

        opened: dict[str, Any] = {}
        if self.job.fresh or self.job.texts or (self.job.lint and self.job.corpus is None):
            for name in self.job.retrievers:
                if not self.job.fresh and not _configured(self.config, name):
                    notes.append(f"{name}: not a retriever the config builds: no texts from it")
                    continue
                opened[name] = stack.enter_context(opened_retriever(self.config, name))
        return opened

    def _replay_candidates(self, store: Store) -> list[tuple[str, str, str]]:
        """A stored replay's most-changed queries that are not questions of the set, in their
        stored form or, with ``captured_text``, as captured (read from the sample's log again)."""
        from retrieval_eval.replay.draft import draft_rows, refuse_hashed
        from retrieval_eval.workflows.replay import stored_record
        from retrieval_eval.workflows.samples import resolve_texts

        assert self.job.replay_id is not None
        outcome = stored_record(store, self.job.replay_id)
        asked = None
        if self.job.captured_text:
            spec = self.config.sample_spec(outcome.sample_name)
            asked = resolve_texts(outcome.sample, spec, self.config.base_dir)
        else:
            refuse_hashed(outcome.sample.privacy, outcome.sample_name, "--captured-text")
        return list(replay_candidates(draft_rows(outcome, self.job.most, asked), self.golden))


def _stored(store: Store, set_identifier: str, name: str) -> Ranked:
    """The retriever's latest stored run of the set; none is an error suggesting ``--fresh``."""
    from retrieval_eval.workflows.leaderboard import latest_run

    try:
        run = latest_run(store, set_identifier, name)
    except UnknownNameError as exc:
        raise UnknownNameError(
            f"{exc}; `retrieval-eval run {set_identifier} {name}` stores one, or pool a run made "
            "now with --fresh (not saved)"
        ) from None
    return Ranked(
        name=name, origin=f"run {run.id} ({run.run_date:%Y-%m-%d %H:%M})", result=run.result
    )


def _configured(config: Config, name: str) -> bool:
    try:
        config.retriever_registry.check(name)
    except Exception:
        return False
    return True


def _lint_candidates(
    config: Config,
    golden: GoldenQuestionSet,
    corpus: Path | None,
    opened: dict[str, Any],
    notes: list[str],
    judgments: Sequence[Judgment],
) -> list[tuple[str, str, str]]:
    """Lint's completeness candidates over ``corpus`` (a mismatch is an error), else over the
    first opened retriever's corpus (a mismatch is a note); ``judgments``' pairs are judged."""
    from retrieval_eval.lint.completeness import CHECK, check_completeness, pool_candidates
    from retrieval_eval.lint.run import CorpusMismatchError, corpus_mismatch, corpus_path
    from retrieval_eval.retrievers.corpus import beir_corpus_file, read_corpus

    path = corpus
    if path is None:
        path = next((p for p in map(corpus_path, opened.values()) if p is not None), None)
    if path is None:
        notes.append(f"{CHECK}: skipped: no corpus; give --corpus PATH or a retriever with one")
        return []
    path = beir_corpus_file(path)
    documents = read_corpus(path)
    mismatch = corpus_mismatch(golden, documents, path)
    if mismatch and corpus is not None:
        raise CorpusMismatchError(mismatch)
    if mismatch:
        notes.append(f"{CHECK}: skipped: {mismatch}")
        return []
    found = check_completeness(golden, documents, config.lint, path, judgments)
    return pool_candidates(found)


def _texts(opened: dict[str, Any], ids: list[str], notes: list[str]) -> dict[str, str]:
    """The texts of ``ids`` from each opened retriever offering them, in turn, each asked only
    for the ids still without one; a failure is a note (redacted)."""
    from retrieval_eval.safety.redaction import redact

    found: dict[str, str] = {}
    for name, retriever in opened.items():
        ask = getattr(retriever, "document_texts", None)
        missing = [i for i in ids if i not in found]
        if not callable(ask) or not missing:
            continue
        try:
            found.update(ask(missing))
        except Exception as exc:
            notes.append(f"{name}: document_texts failed: {redact(str(exc))[:200]}")
    if ids and not found:
        notes.append("no texts: none of the retrievers offers document_texts for these ids")
    return found

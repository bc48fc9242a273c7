"""What ``sets pool`` gathers (:mod:`retrieval_eval.labels.pooling` pools it).

Per retriever, its rankings of the set: its latest stored run's (the store only read), or with
``fresh`` a run made now through the run pipeline (:func:`~retrieval_eval.workflows.labelled_run.
evaluate_opened`) at the pool's depth and NOT saved: pooling is a step of labelling, and a run
saved at another depth than the nightly one would sit in the history beside them. A retriever
with no stored run on the set is an error naming what is stored and suggesting ``--fresh``.

Besides: lint's completeness candidates (``--corpus``, else the corpus of the first retriever
that has one), a stored replay's most-changed queries (:func:`retrieval_eval.workflows.replay.
stored_record`), and the texts of every candidate from the retrievers that offer
``document_texts`` (each asked once, for the ids still without a text). What could not be done
(no corpus, a retriever the config does not build, a text lookup that failed) is a note, not an
error: the candidates found stand.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from retrieval_eval.errors import UnknownNameError
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.labels.judged import judged_pairs
from retrieval_eval.labels.pooling import (
    DEPTH,
    Holes,
    Pool,
    pool,
    replay_candidates,
)

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.evaluation.results import RunResult
    from retrieval_eval.labels.judgments import Judgment
    from retrieval_eval.store import Store


@dataclass(frozen=True)
class Pooled:
    """One retriever's rankings as pooled: where they came from and the run's hit rates."""

    name: str
    origin: str  # "run 12 (2026-11-30 02:00)" or "a fresh run, not saved"
    result: RunResult

    @property
    def rankings(self) -> dict[str, list[str]]:
        return {q.id: list(q.retrieved) for q in self.result.questions}


@dataclass
class Gathered:
    """The pool, the rankings it came from, its rows and what could not be done."""

    pool: Pool
    pooled: list[Pooled]
    rows: list[Judgment]
    notes: list[str] = field(default_factory=list)

    def holes(self, name: str) -> Holes:
        return self.pool.holes[name]


def stored_pooled(store: Store, set_identifier: str, name: str) -> Pooled:
    """The retriever's latest stored run of the set; none is an error suggesting ``--fresh``."""
    from retrieval_eval.workflows.leaderboard import latest_run

    try:
        run = latest_run(store, set_identifier, name)
    except UnknownNameError as exc:
        raise UnknownNameError(
            f"{exc}; `retrieval-eval run {set_identifier} {name}` stores one, or pool a run made "
            "now with --fresh (not saved)"
        ) from None
    return Pooled(name, f"run {run.id} ({run.run_date:%Y-%m-%d %H:%M})", run.result)


def fresh_pooled(
    config: Config, golden: GoldenQuestionSet, name: str, depth: int, retriever: Any
) -> Pooled:
    """A run of ``retriever`` made now by the run pipeline, its rankings kept to ``depth`` at
    least (the config's cutoffs and ``depth``); not saved."""
    from retrieval_eval.workflows.labelled_run import Plan, evaluate_opened, resolve_settings

    settings = resolve_settings(config, golden.identifier, name)
    cutoffs = sorted({*settings.cutoffs, depth})
    settings = settings.model_copy(update={"cutoffs": cutoffs})
    plan = Plan(
        config, golden, name, settings, config.section_for(golden.identifier, name, "thresholds")
    )
    return Pooled(name, "a fresh run, not saved", evaluate_opened(plan, retriever))


def gather(
    config: Config,
    golden: GoldenQuestionSet,
    retrievers: Sequence[str],
    *,
    store: Store | None,
    depth: int = DEPTH,
    fresh: bool = False,
    judgments: Sequence[Judgment] = (),
    corpus: Path | None = None,
    lint: bool = True,
    replay_id: int | None = None,
    most: int = 50,
    texts: bool = True,
    captured_text: bool = False,
) -> Gathered:
    """Pool ``retrievers`` on ``golden`` (see the module docstring); ``store`` may be None only
    with ``fresh`` and no ``replay_id``, whose queries are in their stored form or, with
    ``captured_text``, as captured (read from the sample's log again). The pairs ``judgments``
    and the store's judgments grade are judged: neither candidates nor holes."""
    from retrieval_eval.workflows.labelled_run import opened_retriever

    if store is not None:
        judgments = [*judgments, *store.judgments.read(golden.identifier)]

    notes: list[str] = []
    with ExitStack() as stack:
        opened: dict[str, Any] = {}
        if fresh or texts or (lint and corpus is None):
            for name in retrievers:
                if not fresh and not _configured(config, name):
                    notes.append(f"{name}: not a retriever the config builds: no texts from it")
                    continue
                opened[name] = stack.enter_context(opened_retriever(config, name))
        if fresh:
            pooled = [fresh_pooled(config, golden, n, depth, opened[n]) for n in retrievers]
        else:
            assert store is not None
            pooled = [stored_pooled(store, golden.identifier, n) for n in retrievers]
        extra: list[tuple[str, str, str]] = []
        if lint:
            extra.extend(_lint_candidates(config, golden, corpus, opened, notes, judgments))
        if replay_id is not None:
            from retrieval_eval.replay.draft import draft_rows, refuse_hashed
            from retrieval_eval.workflows.replay import stored_record
            from retrieval_eval.workflows.samples import resolve_texts

            assert store is not None
            outcome = stored_record(store, replay_id)
            asked = None
            if captured_text:
                spec = config.sample_spec(outcome.sample_name)
                asked = resolve_texts(outcome.sample, spec, config.base_dir)
            else:
                refuse_hashed(outcome.sample.privacy, outcome.sample_name, "--captured-text")
            extra.extend(replay_candidates(draft_rows(outcome, most, asked), golden))
        kept = {p.name: p.result.settings.depth for p in pooled}
        for p in pooled:
            if kept[p.name] < depth:
                notes.append(
                    f"{p.name}: {p.origin} kept its rankings to top {kept[p.name]} only: its "
                    f"candidates and holes are counted at {kept[p.name]}; pool a run made now "
                    f"with --fresh, or keep top {depth} in runs (`run --cutoffs 1,3,{depth}`, run.cutoffs)"
                )
        result = pool(
            golden,
            {p.name: p.rankings for p in pooled},
            depth,
            judged_pairs(rows=judgments),
            extra,
            kept,
        )
        found = _texts(opened, sorted({doc for _, doc in result.sources}), notes) if texts else {}
    return Gathered(result, pooled, result.rows(golden, found), notes)


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

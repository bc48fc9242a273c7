"""The scoring protocol: overfetch, collapse to distinct documents, score hits.

For each question the retriever is asked for ``depth × OVERFETCH_MULTIPLIER`` ids (12 for the
default top-3). Duplicate ids collapse to their first occurrence and empty ids are ignored, so
"top-3" means the three best DISTINCT documents (chunk results become document results).

- Top-1 hit: the first distinct document is a target. Top-3 hit: any of the first three is.
- A question with no expected documents is a hit, at both depths, only when the retriever
  returns nothing.
- Graded labels: the targets are the documents graded at least ``RunSettings.relevance_level``
  (:meth:`GoldenQuestion.targets`); a question with none at that level is scored as one with
  no expected documents, in the hit rates (being judged, it counts 0 in recall and MRR:
  :mod:`~retrieval_eval.evaluation.metrics`).
- A retriever that raises, times out or returns something other than a sequence of strings
  (or an id that is no Unicode text: a lone surrogate, ``retrieval_eval.safety.surrogates``)
  records the error and counts as a MISS at both depths, no-result questions included: an
  outage must never score as "correctly found nothing". The run goes on. "Raises" means any
  exception but KeyboardInterrupt: a retriever's ``sys.exit()`` or stray ``GeneratorExit`` is
  its question's error, not the end of the run (nor, from a call thread, the process's exit
  code); an interrupt still stops the run.

The per-question timeout (``timeout_s``; a ``retrieve_many`` batch gets it times its size):

- A call that TOOK longer than its budget is a timeout, however it ended: the scorer times
  every call and records an overrun as ``retrieval timed out after N s`` when it returns.
- A call that does not RETURN in time does not hold the run: it is abandoned at its deadline
  with its thread (:mod:`retrieval_eval.evaluation.deadline`), and a fresh thread takes the rest.
- A retriever that declares ``bounds_own_time`` (the ``http`` adapter: per-attempt timeouts,
  bounded retries) ends its own calls; only the first rule applies, and with one question at a
  time it runs in the calling thread. So does every retriever when ``timeout_s`` is None.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from functools import partial
from itertools import chain
from typing import Any, Protocol, TypeVar

from retrieval_eval.evaluation.aggregate import summarise
from retrieval_eval.evaluation.deadline import Supervisor
from retrieval_eval.evaluation.results import QuestionResult, RunResult, RunSettings
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.base import EvaluatableRetriever, checked_identifier
from retrieval_eval.retrievers.ranking import check_ranking, refuse_surrogate
from retrieval_eval.safety.collector import paused_gc
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.redaction import redact
from retrieval_eval.safety.surrogates import escaped, has_lone_surrogate

DEFAULT_BATCH_SIZE = 64
T = TypeVar("T")


class Asked(Protocol):
    """What the protocol needs of a question: its text, and its id for ``retrieve_for``."""

    @property
    def id(self) -> str: ...

    @property
    def question(self) -> str: ...


# what one call's outcome becomes: (question, raw ranking or None, depth, latency ms, error)
Outcome = Callable[[Any, list[str] | None, int, float, str | None], T]


def score_question(
    question: GoldenQuestion,
    ranking: Sequence[str] | None,
    *,
    depth: int = 3,
    latency_ms: float | None = None,
    error: str | None = None,
    relevance_level: int = 1,
) -> QuestionResult:
    """Score one question from its raw ranking (or its error). A kept id that is no Unicode
    text (a lone surrogate) raises ValueError, as in :func:`score_many`."""
    result = QuestionResult(**_scored(question, ranking, depth, latency_ms, error, relevance_level))
    if has_lone_surrogate(result.retrieved):
        refuse_surrogate(ranking or (), f"the ranking of question {quote(question.id)} holds")
    return result


def _scored(
    question: GoldenQuestion,
    ranking: Sequence[str] | None,
    depth: int,
    latency_ms: float | None,
    error: str | None,
    level: int = 1,
) -> dict[str, Any]:
    """The rules, once: the field values of the question's result (targets at ``level``)."""
    # collapse(), inlined on this hot path: first occurrences in order, empty ids dropped
    seen = dict.fromkeys(ranking) if error is None and ranking else {}
    seen.pop("", None)
    distinct = list(seen)
    targets = question.targets(level)
    first_rank = None
    if len(targets) == 1:  # the common case: a hash lookup, no set to build
        if targets[0] in seen:
            first_rank = distinct.index(targets[0]) + 1
    elif targets:
        wanted = set(targets)
        for rank, doc_id in enumerate(distinct, start=1):
            if doc_id in wanted:
                first_rank = rank
                break
    if error is not None:
        top1 = top3 = False
    elif not targets:
        top1 = top3 = not distinct
    else:
        top1 = first_rank == 1
        top3 = first_rank is not None and first_rank <= 3
    return {
        "id": question.id,
        "question": question.question,
        "form": question.form,
        "hard_class": question.hard_class,
        "expected_document_ids": targets,
        # above level 1 an ungraded question's targets (grade 1) are judged, not targets: nDCG's
        # gains and what makes it count in recall, MRR and nDCG (trec_eval's -l2)
        "grades": question.relevance if question.grades or level > 1 else None,
        "top1_hit": top1,
        "top3_hit": top3,
        "first_hit_rank": first_rank,
        "retrieved": distinct[:depth],
        "latency_ms": latency_ms,
        "error": error,
    }


def score_many(
    questions: Sequence[GoldenQuestion],
    rankings: Sequence[Sequence[str] | None],
    *,
    depth: int = 3,
    relevance_level: int = 1,
) -> list[QuestionResult]:
    """Score rankings you already hold (a run file, a notebook), one per question, in bulk.

    The same rules and results as :func:`score_question` (no latency is recorded), with the cyclic
    garbage collector paused. A kept id that is no Unicode text (a lone surrogate) raises
    ValueError naming its question.
    """
    if len(questions) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings for {len(questions)} questions")
    with paused_gc():
        results = [
            QuestionResult.model_validate(
                _scored(question, ranking, depth, None, None, relevance_level)
            )
            for question, ranking in zip(questions, rankings, strict=True)
        ]
    # what is kept must be text (what validation would not check)
    if has_lone_surrogate(chain.from_iterable(r.retrieved for r in results)):
        bad = next(i for i, r in enumerate(results) if has_lone_surrogate(r.retrieved))
        what = f"the ranking of question {quote(results[bad].id)} holds"
        refuse_surrogate(rankings[bad] or (), what)
    return results


def _timed_out(budget_s: float) -> str:
    return f"retrieval timed out after {budget_s:g} s"


def _message(exc: BaseException) -> str:
    """``str(exc)``, or "" when the exception's ``__str__`` itself raises: a retriever's broken
    exception is still a recorded miss (named by its type), never the end of the run."""
    try:
        return str(exc)
    except KeyboardInterrupt:
        raise
    except BaseException:
        return ""


def _describe(exc: BaseException) -> str:
    """A retriever's exception as its question's error text: every known secret masked, for
    every adapter, before anything reports, logs, spools or stores it."""
    text = escaped(redact(_message(exc).strip()))  # a lone surrogate would crash the save
    if isinstance(exc, TimeoutError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _result(
    question: GoldenQuestion,
    ranking: list[str] | None,
    depth: int,
    latency_ms: float,
    error: str | None,
    level: int = 1,
) -> QuestionResult:
    return QuestionResult.of_scorer(_scored(question, ranking, depth, latency_ms, error, level))


def _chunk_scorer(
    retriever: EvaluatableRetriever, settings: RunSettings, outcome: Outcome[T]
) -> tuple[Callable[[Sequence[Any]], list[T]], Callable[[Any], T]]:
    """What asks about one chunk in the calling thread and turns each answer into ``outcome``
    (:func:`_result` scores it), and what asks about one question; built once per run.

    A chunk of several questions is one ``retrieve_many`` call; otherwise each question is its
    own call. A call that took longer than its budget (``timeout_s`` per question) is recorded
    as timed out when it returns; one that does not return in time is the supervisor's.
    """
    limit, depth, timeout = settings.fetch_limit, settings.depth, settings.timeout_s
    many = getattr(retriever, "retrieve_many", None)
    by_question = getattr(retriever, "retrieve_for", None)  # wants the question's id (run_file)
    retrieve = retriever.retrieve
    clock = time.perf_counter

    def batch(chunk: Sequence[Any]) -> list[T]:
        assert many is not None
        start = clock()
        raw: Any = None
        try:
            raw = many([q.question for q in chunk], limit)
            if not isinstance(raw, Sequence) or len(raw) != len(chunk):
                raise TypeError(
                    f"retrieve_many returned {len(raw) if isinstance(raw, Sequence) else type(raw).__name__}"
                    f" rankings for {len(chunk)} questions"
                )
            error = None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit, GeneratorExit too: see the module docstring
            error = _describe(exc)
        elapsed = clock() - start
        budget = None if timeout is None else timeout * len(chunk)
        if error is None and budget is not None and elapsed > budget:
            error = _timed_out(budget)
        per_question = elapsed * 1000 / len(chunk)
        if error is not None:
            return [outcome(q, None, depth, per_question, error) for q in chunk]
        # one malformed ranking fails its own question only, as with one call per question
        return [
            _score_raw(q, r, depth, per_question, outcome) for q, r in zip(chunk, raw, strict=True)
        ]

    def one(question: Any) -> T:
        start = clock()
        ranking: list[str] | None
        try:
            if by_question is not None:
                value = by_question(question, limit)
            else:
                value = retrieve(question.question, limit)
            ranking, error = check_ranking(value), None
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # SystemExit, GeneratorExit too: see the module docstring
            ranking, error = None, _describe(exc)
        elapsed = clock() - start
        if error is None and timeout is not None and elapsed > timeout:
            ranking, error = None, _timed_out(timeout)
        return outcome(question, ranking, depth, elapsed * 1000, error)

    def score(chunk: Sequence[Any]) -> list[T]:
        if many is not None and len(chunk) > 1:
            return batch(chunk)
        return [one(question) for question in chunk]

    return score, one


def _score_raw(question: Any, raw: Any, depth: int, latency_ms: float, outcome: Outcome[T]) -> T:
    try:
        ranking = check_ranking(raw)
    except (TypeError, ValueError) as exc:
        return outcome(question, None, depth, latency_ms, _describe(exc))
    return outcome(question, ranking, depth, latency_ms, None)


def batches(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """Split ``items`` into consecutive slices of at most ``size``."""
    return [items[i : i + size] for i in range(0, len(items), max(1, size))]


def score_questions(
    questions: Sequence[GoldenQuestion],
    retriever: EvaluatableRetriever,
    settings: RunSettings | None = None,
    *,
    progress: Callable[[int], None] | None = None,
) -> list[QuestionResult]:
    """Ask the retriever every question (bounded concurrency) and score each; order is kept.

    Retrievers with ``retrieve_many`` get batches; others one call per question. At most
    ``settings.max_concurrency`` (else the retriever's ``max_concurrency``, else 1) calls run
    at once. With one at a time and no deadline to watch (no timeout, or a retriever that
    ``bounds_own_time``) the calls run in the calling thread; otherwise on call threads the
    calling thread supervises (see the module docstring).
    """
    settings = settings or RunSettings()
    level = settings.relevance_level
    outcome = _result if level == 1 else partial(_result, level=level)
    return ask(questions, retriever, settings, outcome, progress=progress)


def ask(
    questions: Sequence[Asked],
    retriever: EvaluatableRetriever,
    settings: RunSettings,
    outcome: Outcome[T],
    *,
    progress: Callable[[int], None] | None = None,
) -> list[T]:
    """The protocol of :func:`score_questions` (batches, bounded concurrency, deadlines, errors
    recorded), each answer handed to ``outcome`` instead of scored: a replay keeps rankings and
    errors only, with no labels to score them against. Order is kept."""
    workers = settings.max_concurrency or getattr(retriever, "max_concurrency", 1) or 1
    batch_size = DEFAULT_BATCH_SIZE if hasattr(retriever, "retrieve_many") else 1
    # spread the work so every worker has some, without one batch per question
    batch_size = max(1, min(batch_size, -(-len(questions) // workers)))
    timeout = settings.timeout_s
    # a retriever whose own timeouts end every call needs no deadline watched; its overruns are
    # still recorded as timeouts when the call returns
    deadline = None if getattr(retriever, "bounds_own_time", False) else timeout

    score, one = _chunk_scorer(retriever, settings, outcome)
    if workers <= 1 and deadline is None and batch_size == 1:  # one call per question, here
        if progress is None:
            return [one(question) for question in questions]
        out: list[T] = []
        for question in questions:
            out.append(one(question))
            progress(1)
        return out
    chunks = batches(list(questions), batch_size)
    if workers <= 1 and deadline is None:
        out = []
        for chunk in chunks:
            out.extend(score(chunk))
            if progress:
                progress(len(chunk))
        return out

    def expire(chunk: Sequence[Any], elapsed_s: float, budget_s: float) -> list[T]:
        latency = elapsed_s * 1000 / len(chunk)
        return [outcome(q, None, settings.depth, latency, _timed_out(budget_s)) for q in chunk]

    return Supervisor(chunks, score, expire, deadline).run(workers, progress)


@contextmanager
def _progress_bar(total: int, enabled: bool, label: str) -> Iterator[Callable[[int], None] | None]:
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        transient=True,
    ) as bar:
        task = bar.add_task(label, total=total)
        yield lambda n: bar.advance(task, n)


def summarise_set(
    golden_set: GoldenQuestionSet,
    questions: list[QuestionResult],
    *,
    retriever: str,
    settings: RunSettings,
    started_at: datetime | None = None,
    finished_at: datetime | None = None,
    run_key: str | None = None,
) -> RunResult:
    """Aggregate ``questions`` into a RunResult labelled with the set they came from (its
    fingerprint at the settings' relevance level)."""
    from retrieval_eval.golden.fingerprint import judged_fingerprint

    return summarise(
        questions,
        set_identifier=golden_set.identifier,
        set_name=golden_set.name,
        corpus_revision=golden_set.corpus_revision,
        set_version=golden_set.version,
        labels_fingerprint=judged_fingerprint(golden_set, settings.relevance_level),
        retriever=retriever,
        settings=settings,
        started_at=started_at,
        finished_at=finished_at,
        run_key=run_key,
    )


def evaluate(
    golden_set: GoldenQuestionSet,
    retriever: EvaluatableRetriever,
    settings: RunSettings | None = None,
    *,
    progress: bool = False,
    run_key: str | None = None,
) -> RunResult:
    """Evaluate ``retriever`` on ``golden_set``: the whole protocol, returning a RunResult."""
    settings = settings or RunSettings()
    checked_identifier(retriever)
    started = datetime.now(UTC)
    with _progress_bar(len(golden_set.questions), progress, retriever.identifier) as advance:
        questions = score_questions(golden_set.questions, retriever, settings, progress=advance)
    return summarise_set(
        golden_set,
        questions,
        retriever=retriever.identifier,
        settings=settings,
        started_at=started,
        finished_at=datetime.now(UTC),
        run_key=run_key,
    )


# the name of score_question before "judge" meant only relevance judgments (an export kept as it was)
judge = score_question

"""The scoring protocol: overfetch, collapse to distinct documents, judge hits.

For each question the retriever is asked for ``depth × OVERFETCH_MULTIPLIER`` ids (12 for the
default top-3). Duplicate ids collapse to their first occurrence and empty ids are ignored, so
"top-3" means the three best DISTINCT documents (chunk results become document results).

- Top-1 hit: the first distinct document is a target. Top-3 hit: any of the first three is.
- A question with no expected documents is a hit, at both depths, only when the retriever
  returns nothing.
- A retriever that raises, times out or returns something other than a sequence of strings
  records the error and counts as a MISS at both depths, no-result questions included: an
  outage must never score as "correctly found nothing". The run goes on.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from datetime import UTC, datetime
from itertools import chain
from typing import Any

from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.results import (
    QuestionResult,
    RunResult,
    RunSettings,
    paused_gc,
    summarise,
)
from retrieval_eval.retrievers.base import EvaluatableRetriever

DEFAULT_BATCH_SIZE = 64


def collapse(ranking: Sequence[str]) -> list[str]:
    """Distinct ids in first-occurrence order, empty ids dropped."""
    # dict.fromkeys keeps first occurrences in order at C speed (the 100k-question hot path)
    distinct = dict.fromkeys(ranking)
    distinct.pop("", None)
    return list(distinct)


def judge(
    question: GoldenQuestion,
    ranking: Sequence[str] | None,
    *,
    depth: int = 3,
    latency_ms: float | None = None,
    error: str | None = None,
) -> QuestionResult:
    """Score one question from its raw ranking (or its error)."""
    return QuestionResult(**_judged(question, ranking, depth, latency_ms, error))


def _judged(
    question: GoldenQuestion,
    ranking: Sequence[str] | None,
    depth: int,
    latency_ms: float | None,
    error: str | None,
) -> dict[str, Any]:
    """The rules, once: the field values of the question's result."""
    # collapse(), inlined on this hot path: first occurrences in order, empty ids dropped
    seen = dict.fromkeys(ranking) if error is None and ranking else {}
    seen.pop("", None)
    distinct = list(seen)
    targets = question.expected_document_ids
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
        "expected_document_ids": list(targets),
        "top1_hit": top1,
        "top3_hit": top3,
        "first_hit_rank": first_rank,
        "retrieved": distinct[:depth],
        "latency_ms": latency_ms,
        "error": error,
    }


def judge_many(
    questions: Sequence[GoldenQuestion],
    rankings: Sequence[Sequence[str] | None],
    *,
    depth: int = 3,
) -> list[QuestionResult]:
    """Score rankings you already hold (a run file, a notebook), one per question, in bulk.

    The same rules and results as :func:`judge` (no latency is recorded), about twice as fast:
    the cyclic garbage collector is paused, and results whose kept ids are all strings skip
    pydantic's re-validation of values the scorer built itself from a validated question.
    """
    if len(questions) != len(rankings):
        raise ValueError(f"{len(rankings)} rankings for {len(questions)} questions")
    with paused_gc():
        # one C-level pass over every id: only all-string rankings may skip validation
        kinds = set(map(type, chain.from_iterable(r for r in rankings if r)))
        build = QuestionResult.trusted if kinds <= {str} else _validated
        return [
            build(_judged(question, ranking, depth, None, None))
            for question, ranking in zip(questions, rankings, strict=True)
        ]


def _validated(values: dict[str, Any]) -> QuestionResult:
    return QuestionResult(**values)


def check_ranking(value: Any) -> list[str]:
    """Accept a sequence of strings; anything else raises TypeError with what was wrong."""
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        hint = " (convert arrays with .tolist())" if hasattr(value, "tolist") else ""
        raise TypeError(
            f"retriever returned {type(value).__name__}, expected a sequence of document id "
            f"strings{hint}"
        )
    for index, item in enumerate(value):
        if not isinstance(item, str):
            raise TypeError(
                f"retriever returned {type(item).__name__} at position {index}, expected a "
                "document id string"
            )
    return list(value)


class _Watchdog:
    """A reusable daemon thread that runs one retrieval call at a time for one scoring thread.

    Starting a thread per call cost ~0.1-0.2 ms, most of the time a fast retriever (a run file,
    a loopback service at 32 in flight) needs. A call that overruns its timeout is abandoned
    with its thread, as before: the scoring thread takes a fresh watchdog for its next call.
    The thread ends once its watchdog is dropped (its scoring thread ended, or it was abandoned)
    and the call in hand, if any, has returned.
    """

    def __init__(self) -> None:
        calls: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._calls = calls
        threading.Thread(
            target=self._serve, args=(calls,), daemon=True, name="retrieval-eval-call"
        ).start()
        weakref.finalize(self, calls.put, None)  # the thread must not keep self alive

    @staticmethod
    def _serve(calls: queue.SimpleQueue[Any]) -> None:
        while (job := calls.get()) is not None:
            function, box, done = job
            try:
                box["value"] = function()
            except BaseException as exc:
                box["error"] = exc
            done.set()

    def call(self, function: Callable[[], Any], timeout_s: float) -> dict[str, Any] | None:
        """The call's outcome (``value`` or ``error``), or None when it overran."""
        box: dict[str, Any] = {}
        done = threading.Event()
        self._calls.put((function, box, done))
        return box if done.wait(timeout_s) else None


_watchdogs = threading.local()


def _call(function: Callable[[], Any], timeout_s: float | None) -> Any:
    """Run ``function``; with a timeout, on a watchdog thread that is abandoned when it overruns."""
    if timeout_s is None:
        return function()
    watchdog = getattr(_watchdogs, "current", None)
    if watchdog is None:
        watchdog = _watchdogs.current = _Watchdog()
    box = watchdog.call(function, timeout_s)
    if box is None:
        _watchdogs.current = None  # its thread is still busy with the call: leave it
        raise TimeoutError(f"retrieval timed out after {timeout_s:g} s")
    if "error" in box:
        raise box["error"]
    return box["value"]


def _describe(exc: BaseException) -> str:
    text = str(exc).strip()
    if isinstance(exc, TimeoutError) and text:
        return text
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _score_batch(
    batch: Sequence[GoldenQuestion], retriever: EvaluatableRetriever, settings: RunSettings
) -> list[QuestionResult]:
    limit, depth, timeout = settings.fetch_limit, settings.depth, settings.timeout_s
    many = getattr(retriever, "retrieve_many", None)
    if many is not None and len(batch) > 1:
        texts = [q.question for q in batch]
        start = time.perf_counter()
        try:
            raw = _call(
                lambda: many(texts, limit), None if timeout is None else timeout * len(batch)
            )
            if not isinstance(raw, Sequence) or len(raw) != len(batch):
                raise TypeError(
                    f"retrieve_many returned {len(raw) if isinstance(raw, Sequence) else type(raw).__name__}"
                    f" rankings for {len(batch)} questions"
                )
        except Exception as exc:
            elapsed = (time.perf_counter() - start) * 1000 / len(batch)
            return [
                judge(q, None, depth=depth, latency_ms=elapsed, error=_describe(exc)) for q in batch
            ]
        elapsed = (time.perf_counter() - start) * 1000 / len(batch)
        # one malformed ranking fails its own question only, as with one call per question
        return [_judge_raw(q, r, depth, elapsed) for q, r in zip(batch, raw, strict=True)]
    results = []
    by_question = getattr(retriever, "retrieve_for", None)  # wants the question's id (run_file)
    # a retriever whose own timeouts bound every call runs in the scoring thread: handing each
    # call to a watchdog thread cost ~0.1 ms, a tenth of a fast remote call's budget
    self_timed = timeout is not None and getattr(retriever, "bounds_own_time", False)
    for question in batch:
        start = time.perf_counter()
        ranking: list[str] | None
        try:
            if by_question is not None:
                call = functools.partial(by_question, question, limit)
            else:
                call = functools.partial(retriever.retrieve, question.question, limit)
            ranking = check_ranking(_call(call, None if self_timed else timeout))
            error = None
        except Exception as exc:
            ranking, error = None, _describe(exc)
        elapsed = (time.perf_counter() - start) * 1000
        if self_timed and error is None and elapsed > timeout * 1000:  # type: ignore[operator]
            ranking, error = None, f"retrieval timed out after {timeout:g} s"
        results.append(judge(question, ranking, depth=depth, latency_ms=elapsed, error=error))
    return results


def _judge_raw(question: GoldenQuestion, raw: Any, depth: int, latency_ms: float) -> QuestionResult:
    try:
        ranking = check_ranking(raw)
    except TypeError as exc:
        return judge(question, None, depth=depth, latency_ms=latency_ms, error=_describe(exc))
    return judge(question, ranking, depth=depth, latency_ms=latency_ms)


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
    """Ask the retriever every question (bounded concurrency) and judge each; order is kept.

    Retrievers with ``retrieve_many`` get batches; others one call per question. At most
    ``settings.max_concurrency`` (else the retriever's ``max_concurrency``, else 1) calls run
    at once.
    """
    settings = settings or RunSettings()
    workers = settings.max_concurrency or getattr(retriever, "max_concurrency", 1) or 1
    batch_size = DEFAULT_BATCH_SIZE if hasattr(retriever, "retrieve_many") else 1
    # spread the work so every worker has some, without one batch per question
    batch_size = max(1, min(batch_size, -(-len(questions) // workers)))
    chunks = batches(list(questions), batch_size)
    out: list[QuestionResult] = []
    if workers <= 1:
        for chunk in chunks:
            out.extend(_score_batch(chunk, retriever, settings))
            if progress:
                progress(len(chunk))
        return out
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="retrieval-eval") as pool:

        def work(chunk: Sequence[GoldenQuestion]) -> list[QuestionResult]:
            return _score_batch(chunk, retriever, settings)

        for chunk, done in zip(chunks, pool.map(work, chunks), strict=True):
            out.extend(done)
            if progress:
                progress(len(chunk))
    return out


@contextmanager
def _progress_bar(total: int, enabled: bool, label: str) -> Iterator[Callable[[int], None] | None]:
    if not enabled:
        yield None
        return
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

    from retrieval_eval.report import stderr_console

    with Progress(
        "[progress.description]{task.description}",
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=stderr_console(),
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
    """Aggregate ``questions`` into a RunResult labelled with the set they came from."""
    return summarise(
        questions,
        set_identifier=golden_set.identifier,
        set_name=golden_set.name,
        corpus_revision=golden_set.corpus_revision,
        labels_fingerprint=golden_set.fingerprint,
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

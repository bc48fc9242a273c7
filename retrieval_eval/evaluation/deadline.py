"""Deadlines for retriever calls that may never return: the scorer's call supervisor.

Calls run on call threads and the calling thread, which sleeps until the earliest deadline,
abandons a call still running at its deadline. A call costs a lock and a clock read, not a
hand-off to another thread; and a function that hangs never hangs the run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from itertools import count
from typing import Any, Generic, TypeVar

PROGRESS_INTERVAL_S = 0.1  # how often a supervised run reports progress
# the longest the calling thread sleeps: a signal the kernel hands to a call thread (Ctrl-C,
# SIGTERM) does not wake the calling thread, which alone runs Python's handlers, until then
WAKE_INTERVAL_S = 0.25
T = TypeVar("T")  # what a question's call becomes: a judged result, or a replay's ranking


class Supervisor(Generic[T]):
    """Scores chunks on call threads while the calling thread watches their deadlines.

    ``workers`` daemon threads take chunks in order from a shared cursor and score each in
    their own thread with ``score``. The calling thread sleeps until the earliest deadline of a
    call in flight (``timeout_s`` times its questions), never longer than :data:`WAKE_INTERVAL_S`
    (so an interrupt is handled at once), and wakes when everything is done. A call
    still running at its deadline is abandoned with its thread: its questions are recorded as
    timed out (``expire``), a fresh thread takes the remaining chunks, and whatever the abandoned
    call returns later is dropped. ``timeout_s=None`` sets no deadlines. Results keep the
    chunks' order.
    """

    def __init__(
        self,
        chunks: list[Sequence[Any]],
        score: Callable[[Sequence[Any]], list[T]],
        expire: Callable[[Sequence[Any], float, float], list[T]],
        timeout_s: float | None,
    ) -> None:
        self._chunks, self._score, self._expire = chunks, score, expire
        self._timeout = timeout_s
        self._results: list[list[T]] = [[] for _ in chunks]
        self._lock = threading.Lock()
        self._next = 0  # the next chunk to take
        self._left = len(chunks)  # chunks without results
        self._scored = 0  # questions with results
        self._in_flight: dict[int, tuple[int, float]] = {}  # thread number: (chunk, started)
        self._numbers = count()
        self._settled = threading.Event()  # everything scored, or a call raised
        self._stopped = False
        self._failure: BaseException | None = None

    def run(self, workers: int, progress: Callable[[int], None] | None) -> list[T]:
        reported = 0
        try:
            with self._lock:
                for _ in range(min(workers, len(self._chunks))):
                    self._start()
            while True:
                with self._lock:
                    wake = self._check_deadlines() if self._timeout is not None else None
                    failure, left, scored = self._failure, self._left, self._scored
                if progress is not None and scored > reported:
                    progress(scored - reported)
                    reported = scored
                if failure is not None:
                    raise failure
                if not left:
                    break
                # (also below TIMEOUT_MAX, which a timeout_s the config accepts, 1e300, is not)
                interval = WAKE_INTERVAL_S if progress is None else PROGRESS_INTERVAL_S
                self._settled.wait(interval if wake is None else min(wake, interval))
        finally:
            with self._lock:
                self._stopped = True  # on an error or an interrupt, no thread takes more work
        return [result for chunk in self._results for result in chunk]

    def _start(self) -> None:
        threading.Thread(
            target=self._work, args=(next(self._numbers),), daemon=True, name="retrieval-eval-call"
        ).start()

    def _done(self, index: int, results: list[T]) -> None:
        self._results[index] = results
        self._left -= 1
        self._scored += len(results)
        if not self._left:
            self._settled.set()

    def _claim(self, number: int) -> int | None:
        """The next chunk for thread ``number``, registered in flight; None when there is none.
        Called with the lock held."""
        if self._stopped or self._next >= len(self._chunks):
            return None
        index = self._next
        self._next += 1
        self._in_flight[number] = (index, time.perf_counter())
        return index

    def _work(self, number: int) -> None:
        # one lock per chunk: a chunk's results are handed in and the next one claimed at once
        # (a chunk is one question for a retriever without retrieve_many)
        with self._lock:
            index = self._claim(number)
        while index is not None:
            try:
                results = self._score(self._chunks[index])
            except BaseException as exc:  # not the retriever's error (those are recorded): stop
                with self._lock:
                    if self._in_flight.pop(number, None) is not None and self._failure is None:
                        self._failure = exc
                        self._stopped = True
                        self._settled.set()
                return
            with self._lock:
                if self._in_flight.pop(number, None) is None:
                    return  # abandoned: its questions were recorded as timed out
                self._done(index, results)
                index = self._claim(number)

    def _check_deadlines(self) -> float:
        """Abandon calls past their deadline; seconds until the next deadline can fall."""
        assert self._timeout is not None
        now = time.perf_counter()
        wake = self._timeout  # a call that starts from now on has at least this long
        for number, (index, started) in list(self._in_flight.items()):
            chunk = self._chunks[index]
            remaining = started + self._timeout * len(chunk) - now
            if remaining > 0:
                wake = min(wake, remaining)
                continue
            del self._in_flight[number]  # its thread sees this when the call returns, and ends
            self._done(index, self._expire(chunk, now - started, self._timeout * len(chunk)))
            if not self._stopped and self._next < len(self._chunks):
                self._start()
        return wake

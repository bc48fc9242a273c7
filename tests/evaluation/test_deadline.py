"""The supervising thread of a run whose calls run on call threads (timeouts on): an interrupt
stops the run at once, whichever thread the kernel handed the signal to."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Iterator

import pytest

from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import score_questions
from retrieval_eval.golden.models import GoldenQuestion, QuestionForm
from retrieval_eval.retrievers.base import FunctionRetriever


@pytest.fixture
def ctrl_c_raises() -> Iterator[None]:
    """SIGINT as Python's default, KeyboardInterrupt (whatever the test runner set)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_delivered_to_a_call_thread_stops_the_run_at_once(ctrl_c_raises: None) -> None:
    def retrieve(question: str, limit: int) -> list[str]:
        # the kernel may hand a process's SIGINT to any of its threads: here, this call thread;
        # Python runs the handler in the main thread, which sleeps until its next deadline
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        time.sleep(10)
        return ["a"]

    questions = [GoldenQuestion(id="q1", question="first", form=QuestionForm("match"))]
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        score_questions(questions, FunctionRetriever(retrieve), RunSettings(timeout_s=30))
    assert time.monotonic() - started < 3  # not the 30 s of the call's deadline

"""Retriever output kept off stdout, which carries the reports (``run --format json | jq``).

While a retriever's code runs (imported, prepared, built, asked, closed) whatever it writes to
stdout goes to stderr: ``print`` and ``sys.stdout`` writes from any thread (``sys.stdout`` is
stderr's stream meanwhile), and writes to file descriptor 1 itself (``os.write(1, ...)``, a C
extension's ``printf``, a subprocess that inherited it), since descriptor 1 then points where
descriptor 2 does. Before descriptor 1 is given back, Python's and C's stdio buffers are flushed,
so nothing a retriever buffered reaches stdout later. Nested and concurrent uses share one
redirection, undone when the last one ends, on errors and interrupts too.

Not covered: a call the scorer abandoned at its deadline that writes after the run, and a
stream captured before the redirection by a test harness in the same process (not a real fd).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
from collections.abc import Iterator
from typing import TextIO

_lock = threading.Lock()
_users = 0
_saved_fd: int | None = None  # descriptor 1 as it was, while redirected
_saved_stream: TextIO | None = None  # sys.stdout as it was


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send stdout to stderr for the block (see the module docstring)."""
    global _users
    with _lock:
        if _users == 0:
            _redirect()
        _users += 1
    try:
        yield
    finally:
        with _lock:
            _users -= 1
            if _users == 0:
                _restore()


def _redirect() -> None:
    global _saved_fd, _saved_stream
    _flush()  # what was written before goes where it was meant to
    with contextlib.suppress(OSError):  # no descriptor 1 or 2 (a daemon): nothing to redirect
        saved = os.dup(1)
        try:
            os.dup2(2, 1)
        except OSError:
            os.close(saved)
            raise
        _saved_fd = saved
    if sys.stderr is not None:
        _saved_stream, sys.stdout = sys.stdout, sys.stderr


def _restore() -> None:
    global _saved_fd, _saved_stream
    _flush()
    if _saved_stream is not None:
        sys.stdout, _saved_stream = _saved_stream, None
    if _saved_fd is not None:
        saved, _saved_fd = _saved_fd, None
        os.dup2(saved, 1)
        os.close(saved)


def _flush() -> None:
    """Flush Python's streams over descriptor 1 and C's stdio buffers (``fflush(NULL)``)."""
    for stream in {id(s): s for s in (sys.stdout, sys.__stdout__, _saved_stream)}.values():
        if stream is not None:
            with contextlib.suppress(Exception):  # a closed or broken stream: nothing to keep
                stream.flush()
    with contextlib.suppress(Exception):  # no C library to ask (not POSIX): nothing buffered
        import ctypes

        ctypes.CDLL(None).fflush(None)

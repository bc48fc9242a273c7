"""How a ``retrieval-eval`` process ends: on SIGTERM, and with threads a retriever left running.

- SIGTERM raises :class:`~retrieval_eval.errors.Terminated` in the main thread, as Ctrl-C raises
  KeyboardInterrupt: the same clean-up runs (an unfinished save rolls back, a spool file is
  written whole or not at all, stdout is given back) and the command says what was saved, exit
  143 (130 for Ctrl-C). A second SIGTERM ends the process at once.
- A non-daemon thread still running when the command is done (a retriever's poller it never
  stopped) would keep the process alive for ever: the interpreter waits for such threads before
  it exits. After :data:`THREAD_GRACE_S` of that wait, a watchdog names them on stderr and ends
  the process with the command's exit code; everything the command printed or saved is final by
  then. Threads that end in time (a pool the interpreter's exit shuts down) are waited for as usual.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, NoReturn

from retrieval_eval.errors import Terminated

THREAD_GRACE_S = 1.0  # how long the exit waits for non-daemon threads before leaving them


def run_process(main: Callable[[], object]) -> NoReturn:
    """Call ``main`` (the CLI, which ends with SystemExit) with SIGTERM as an interrupt, then
    exit with its code, never waiting more than :data:`THREAD_GRACE_S` for threads it left."""
    previous = _handle_sigterm()
    try:
        main()
        code = 0
    except SystemExit as exc:
        code = _exit_code(exc.code)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
    _watch_exit(code)
    sys.exit(code)


def _handle_sigterm() -> Any:
    """Install the SIGTERM handler; return the one it replaced (None: not the main thread)."""

    def terminate(signum: int, frame: FrameType | None) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second SIGTERM ends the process
        raise Terminated()

    try:
        return signal.signal(signal.SIGTERM, terminate)
    except ValueError:  # only the main thread can set handlers: leave SIGTERM as it is
        return None


def _exit_code(code: object) -> int:
    """SystemExit's code as the process's (click exits with ints; None is 0, anything else 1)."""
    if code is None or isinstance(code, int):
        return code or 0
    return 1


def _watch_exit(code: int) -> None:
    """When non-daemon threads are still running, start the watchdog that ends the process if
    the interpreter's exit is still waiting for them after :data:`THREAD_GRACE_S`."""
    if not _running_threads():
        return

    def watch() -> None:
        threading.Event().wait(THREAD_GRACE_S)
        left = _running_threads()
        if not left:
            return
        names = ", ".join(repr(thread.name) for thread in left)
        with contextlib.suppress(Exception):
            for stream in (sys.stdout, sys.stderr):
                if stream is not None:
                    stream.flush()
        with contextlib.suppress(Exception):
            sys.stderr.write(
                f"warning: {len(left)} thread(s) still running after the command: {names}; "
                "exiting without waiting for them (they are not daemon threads; the retriever "
                "that started them should stop them in its close())\n"
            )
            sys.stderr.flush()
        os._exit(code)

    threading.Thread(target=watch, name="retrieval-eval-exit-watchdog", daemon=True).start()


def _running_threads() -> list[threading.Thread]:
    main = threading.main_thread()
    return [t for t in threading.enumerate() if t is not main and not t.daemon and t.is_alive()]

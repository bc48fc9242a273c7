"""Retrievers that misbehave the way a process notices, for the real ``retrieval-eval`` runs of
``test_retriever_output.py`` and ``test_interrupts.py`` (copied into each test's cwd and named
``process_retrievers:NAME``).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import threading
import time

print("process_retrievers imported")  # module-level code runs when `run` checks the name


def loud(question: str, limit: int) -> list[str]:
    """Answers "a" after writing to stdout every way a retriever can."""
    print(f"loud-print {question}")
    sys.stdout.write(f"loud-sys.stdout {question}\n")
    os.write(1, f"loud-fd-1 {question}\n".encode())
    ctypes.CDLL(None).printf(f"loud-c-printf {question}\n".encode())  # buffered by C's stdio
    subprocess.run(["echo", f"loud-child {question}"], check=True)  # inherits descriptor 1
    return ["a"]


def slow(question: str, limit: int) -> list[str]:
    """Says it was asked (on stderr), then takes a minute: a run to interrupt."""
    os.write(2, b"slow retriever asked\n")
    time.sleep(60)
    return ["a"]


def interrupting(question: str, limit: int) -> list[str]:
    raise KeyboardInterrupt


def leaky(question: str, limit: int) -> list[str]:
    """Answers "a", leaving a non-daemon thread that waits for ever (a poller never stopped)."""
    threading.Thread(target=threading.Event().wait, name="leaky-poller", daemon=False).start()
    return ["a"]


def quiet(question: str, limit: int) -> list[str]:
    return ["a"]

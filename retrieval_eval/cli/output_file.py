"""Files a command writes its output to (``run --output``, ``report --html``, the exports).

A path that cannot be written is bad input (exit 2) naming the option, the path, why and the
fix; never a traceback with exit 1, which means a regression. ``run`` checks its ``--output``
before evaluating (:func:`check_writable`: a missing folder, a folder in the way, no write
permission), so a typo costs no run; a write that still fails afterwards (a name too long, a full
disk, ``/dev/full``) is caught by :func:`output_errors`, whose ``after`` says what was kept (the saved run's id).

Edge cases: the check cannot see every failure (it does not create the file, and as root
permissions do not stop a write), hence both; the exports create missing folders as they always
did, so for them only a path whose folder cannot be made (a file in the way) fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from retrieval_eval.errors import InvalidInputError

FIX = "give a path in an existing folder you can write to"


class OutputFileError(InvalidInputError):
    """An output path that cannot be written: exit code 2."""


def check_writable(path: str, option: str) -> None:
    """Raise :class:`OutputFileError` when ``path`` visibly cannot be written (see above)."""
    try:
        problem = _problem(Path(path))
    except OSError as exc:  # a name too long to even look up
        problem = exc.strerror or type(exc).__name__
    if problem:
        raise OutputFileError(f"{option} {path}: cannot write it ({problem}): {FIX}")


def _problem(target: Path) -> str | None:
    parent = target.parent
    existing = next((p for p in (parent, *parent.parents) if p.exists()), Path("."))
    problem = None
    if target.is_dir():
        problem = "it is a folder"
    elif not existing.is_dir():
        problem = f"{existing} is a file, not a folder"
    elif existing != parent:
        problem = f"the folder {parent} does not exist"
    elif not os.access(existing, os.W_OK | os.X_OK) and not target.exists():
        problem = f"the folder {existing} is not writable"
    elif target.exists() and not os.access(target, os.W_OK):
        problem = "the file is not writable"
    return problem


@contextmanager
def output_errors(path: str, option: str, after: str = "") -> Iterator[None]:
    """Turn an OSError while writing ``path`` into :class:`OutputFileError`; ``after`` ends the
    message (what was kept, how to get the output again)."""
    try:
        yield
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise OutputFileError(
            f"{option} {path}: cannot write it ({reason}): {FIX}{after}"
        ) from None

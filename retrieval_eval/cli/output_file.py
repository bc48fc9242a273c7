"""Files a command writes its output to (``run --output``, ``runs report -o``, the exports).

A path that cannot be written is bad input (exit 2) naming the option, the path, why and the
fix; never a traceback with exit 1, which means a regression. ``run`` checks its ``--output``
before evaluating (:func:`check_writable`: a missing folder, a folder in the way, no write
permission), so a typo costs no run; a write that still fails afterwards (a name too long, a full
disk, ``/dev/full``) is caught by :func:`output_errors`, whose ``after`` says what was kept (the saved run's id).
A report on stdout that cannot be written (``run > /dev/full``) is the same error, from
:func:`stdout_errors`.

Edge cases: the check cannot see every failure (it does not create the file, and as root
permissions do not stop a write), hence both; the exports create missing folders as they always
did, so for them only a path whose folder cannot be made (a file in the way) fails.
"""

from __future__ import annotations

import contextlib
import errno
import io
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.safety.files import FIX, FileWriteError, cannot_write


class OutputFileError(InvalidInputError):
    """An output path that cannot be written: exit code 2."""


def check_writable(path: str, option: str | None) -> None:
    """Raise :class:`OutputFileError` when ``path`` visibly cannot be written (see above);
    ``option`` as for :func:`output_errors`."""
    target = Path(path)
    if _read_only(target):  # what the write would fail with, said as a failed write says it
        error = OSError(errno.EROFS, os.strerror(errno.EROFS))
        raise OutputFileError(cannot_write(_where(path, option), error, target.exists()))
    try:
        problem = _problem(target)
    except OSError as exc:  # a name too long to even look up
        problem = exc.strerror or type(exc).__name__
    if problem:
        raise OutputFileError(f"{_where(path, option)}: cannot write it ({problem}): {FIX}")


def _where(path: str, option: str | None) -> str:
    return f"{option} {path}" if option else path


def _read_only(target: Path) -> bool:
    """Whether ``target``'s folder is on a file system mounted read-only (which, unlike a
    permission, stops root too)."""
    try:
        return bool(os.statvfs(target.parent).f_flag & os.ST_RDONLY)
    except OSError:  # a missing folder: _problem says so
        return False


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
def output_errors(
    path: str, option: str | None, after: str = "", exit_code: int = 2
) -> Iterator[None]:
    """Turn a failed write of ``path`` (a :class:`FileWriteError`, or an OSError) into
    :class:`OutputFileError`, naming ``option`` when the user gave the path with one (None: the
    command chose it, as ``sets promote`` its set's own file); ``after`` ends the message (what
    was kept, how to get the output again); ``exit_code`` is another failure's that ``after``
    names (a store that did not take the run), when there is one."""
    try:
        yield
    except FileWriteError as exc:
        message = cannot_write(_where(path, option), exc.error, exc.unchanged)
        raise _failed(message + after, exit_code) from None
    except OSError as exc:
        message = cannot_write(_where(path, option), exc)
        raise _failed(message + after, exit_code) from None


@contextmanager
def stdout_errors(after: str = "", exit_code: int = 2) -> Iterator[None]:
    """:func:`output_errors` for a report printed on stdout (a full disk, ``> /dev/full``, a
    closed pipe). stdout is then pointed at the null device, so the interpreter's last flush of
    what is still buffered cannot fail once more (a second message, and exit code 120)."""
    try:
        yield
        sys.stdout.flush()
    except OSError as exc:
        raise stdout_failure(exc, "the report", "--output FILE", after, exit_code) from None


def stdout_failure(
    exc: OSError, what: str, fix: str, after: str = "", exit_code: int = 2
) -> OutputFileError:
    """The error for ``what`` stdout could not take, with stdout silenced (see below)."""
    silence_stdout()
    return _failed(
        f"stdout: cannot write {what} ({_reason(exc)}): write it to a file with room ({fix}){after}",
        exit_code,
    )


# what writing a stream fails with: a full disk or quota, an I/O error, a closed pipe
STDOUT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EIO, errno.EPIPE})
_FROM_STDOUT = "retrieval_eval_stdout"  # the attribute that marks an OSError of stdout's


class _WatchedBuffer(io.BufferedWriter):
    """stdout's buffer, marking the OSErrors that writing or flushing it raised: a full disk
    while a spool file is written must not be reported as stdout's. ``unbuffered``: each write
    is flushed at once, as a stdout without a buffer (``python -u``, PYTHONUNBUFFERED) was."""

    def __init__(self, raw: io.RawIOBase, *, unbuffered: bool) -> None:
        super().__init__(raw)
        self.unbuffered = unbuffered

    def write(self, data: Any) -> int:
        try:
            written = super().write(data)
            if self.unbuffered:
                super().flush()
            return written
        except OSError as exc:
            setattr(exc, _FROM_STDOUT, True)
            raise

    def flush(self) -> None:
        try:
            super().flush()
        except OSError as exc:
            setattr(exc, _FROM_STDOUT, True)
            raise


def watch_stdout() -> None:
    """Put stdout on a :class:`_WatchedBuffer` (same descriptor, encoding and buffering), so
    :func:`from_stdout` tells its failures from any other file's. A stdout of another kind
    (none, in-memory) is left as it is."""
    stream = sys.stdout
    if type(stream) is not io.TextIOWrapper:
        return
    unbuffered = type(stream.buffer) is io.FileIO
    if not unbuffered and type(stream.buffer) is not io.BufferedWriter:
        return
    stream.flush()
    settings = dict(
        encoding=stream.encoding,
        errors=stream.errors,
        line_buffering=stream.line_buffering,
        write_through=stream.write_through,
    )
    raw = stream.detach()  # detached, the old objects never close the descriptor
    if not unbuffered:
        raw = raw.detach()  # type: ignore[attr-defined]
    watched = _WatchedBuffer(raw, unbuffered=unbuffered)  # type: ignore[arg-type]
    sys.stdout = io.TextIOWrapper(watched, **settings)  # type: ignore[arg-type]


def from_stdout(exc: OSError) -> bool:
    """Whether ``exc`` came from writing stdout: marked by :func:`watch_stdout`'s buffer; when
    stdout is not watched, any error of :data:`STDOUT_ERRNOS` if it has a descriptor (its
    failures cannot be told apart), none if it is in memory (it cannot fail)."""
    if getattr(exc, _FROM_STDOUT, False):
        return True
    if exc.errno not in STDOUT_ERRNOS or isinstance(
        getattr(sys.stdout, "buffer", None), _WatchedBuffer
    ):
        return False
    try:
        sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


def silence_stdout() -> None:
    """Point stdout at the null device, so the interpreter's last flush of what is still
    buffered cannot fail once more (a second message, and exit code 120); an in-memory stream
    (no descriptor) has nothing left to flush."""
    with contextlib.suppress(AttributeError, OSError, ValueError):
        fd = sys.stdout.fileno()
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)


def _reason(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def _failed(message: str, exit_code: int) -> OutputFileError:
    error = OutputFileError(message)
    error.exit_code = exit_code
    return error


def emit(
    text: str, output: str | None, what: str = "the report", after: str = "", exit_code: int = 2
) -> None:
    """Print ``text`` on stdout, or (``-o FILE``; ``-`` is stdout) write it whole to ``output``
    through the one safe writer and say so on stderr: every command's report goes out this way,
    and a failure names the file or stdout, then ``after`` (what was kept)."""
    if output in (None, "-"):
        with stdout_errors(after, exit_code):
            click.echo(text, nl=False)
        return
    from retrieval_eval.safety.files import write_file

    with output_errors(output, "--output", after, exit_code):
        write_file(output, text)
    click.echo(f"{what} written to {output}", err=True)

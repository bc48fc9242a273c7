"""Files a user keeps (set files, judgments files, pools, drafts, exports, reports), written whole
or not at all.

:func:`write_file` writes the text to a temporary file in the target's folder, flushes it to
disk and renames it over the target, so a full disk, a read-only folder or a crash mid-write
leaves the old file as it was (and no temporary file behind); the failure is a
:class:`FileWriteError` (exit 2) naming the real path, why, and the fix. A path that is not a
regular file (``/dev/stdout``, a pipe) is written in place, since it cannot be renamed over.
A symbolic link keeps pointing where it did: the file it points to is replaced.

:func:`folder_lock` is held by a command that reads a file, changes it and writes it back
(``sets promote``), so that two of them at once take turns: an ``flock`` on the file's folder,
as the spool folder's replay lock, so no lock file is left beside the user's files.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from pathlib import Path

from retrieval_eval.errors import InvalidInputError

FIX = "give a path in an existing folder you can write to"
_FIXES = {
    errno.ENOSPC: "free some space on its disk, or write it elsewhere",
    errno.EDQUOT: "free some space in your quota, or write it elsewhere",
    errno.EROFS: "its file system is read-only: write it elsewhere",
}


class FileWriteError(InvalidInputError):
    """A file that could not be written (exit 2); ``error`` is the OSError, ``unchanged`` says
    whether a file already there was left as it was."""

    def __init__(self, path: Path, error: OSError, unchanged: bool) -> None:
        self.path, self.error, self.unchanged = path, error, unchanged
        super().__init__(cannot_write(str(path), error, unchanged))


def cannot_write(where: str, error: OSError, unchanged: bool = False) -> str:
    """The one message for a file that could not be written: ``where`` (the path, after the
    option that named it), why, the fix, and whether the old file is kept."""
    reason = error.strerror or type(error).__name__
    fix = _FIXES.get(error.errno or 0, FIX)
    kept = "; the file is unchanged" if unchanged else ""
    return f"{where}: cannot write it ({reason}): {fix}{kept}"


def write_file(path: str | Path, data: str | bytes, *, make_folder: bool = False) -> Path:
    """Write ``data`` (text as UTF-8) to ``path`` whole, or raise :class:`FileWriteError` and
    leave ``path`` as it was; ``make_folder`` creates missing folders first. Returns ``path``."""
    path = Path(path)
    content = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    try:
        existing = target.stat()
    except OSError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        try:
            with open(target, "wb") as handle:  # a device or a pipe: no rename possible
                handle.write(content)
        except OSError as exc:
            raise FileWriteError(path, exc, unchanged=False) from None
        return path
    try:
        if make_folder:
            target.parent.mkdir(parents=True, exist_ok=True)
        _replace(target, content, existing.st_mode if existing else None)
    except OSError as exc:
        raise FileWriteError(path, exc, unchanged=existing is not None) from None
    return path


def _replace(target: Path, content: bytes, mode: int | None) -> None:
    """``content`` into a new file beside ``target``, synced, then renamed over it; the new
    file is removed on any failure (an interrupt too). It is created as ``open()`` would create
    ``target`` (the umask applies), or with the old file's mode."""
    while True:
        partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
        try:
            fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    try:
        with os.fdopen(fd, "wb") as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode & 0o7777)
            handle.write(content)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(partial, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """The rename made durable (best effort: a folder that cannot be opened is left as is)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


@contextlib.contextmanager
def folder_lock(path: str | Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``'s folder, waiting for another holder to finish; a
    folder that cannot be opened is a :class:`FileWriteError` naming ``path``."""
    path = Path(path)
    folder = Path(os.path.realpath(path)).parent
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as exc:
        raise FileWriteError(path, exc, unchanged=path.exists()) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock

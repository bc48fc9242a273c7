"""The spool: runs and replays the store could not take, kept as JSON files until ``db flush``
saves them.

One file per run, ``<run_key>.json`` in ``$RETRIEVAL_EVAL_HOME/spool`` by default, written
atomically (temporary file, then rename) so a crash never leaves half a run, and a failed write
leaves no ``.partial`` behind. A file holds the run, the thresholds, any pinned baseline and the
store it was meant for (its URL without the password, and a fingerprint of the full URL), so
replaying judges the run exactly as ``run`` would have, in the store ``run`` would have used.

A file that cannot be replayed is set aside in ``rejected/`` beside a ``.reason`` text file; one
replay at a time holds the folder's lock (:func:`replay_lock`, an ``flock`` on the folder itself,
so a read-only folder can be locked too).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Discriminator, Tag, TypeAdapter, ValidationError

from retrieval_eval.config.models import Thresholds
from retrieval_eval.errors import InvalidInputError, RetrievalEvalError
from retrieval_eval.evaluation.results import RunResult
from retrieval_eval.paths import home_dir
from retrieval_eval.replay.record import ReplayRecord
from retrieval_eval.safety.limits import quote

SPOOL_VERSION = 1
REJECTED = "rejected"


class SpooledRun(BaseModel):
    kind: Literal["run"] = "run"
    version: int = SPOOL_VERSION
    result: RunResult
    thresholds: Thresholds
    baseline_run_id: int | None = None
    # the store the run was meant for: masked URL and fingerprint of the full one (files written
    # before these fields replay into the store the replay's own flags name)
    store: str | None = None
    store_fingerprint: str | None = None

    @property
    def run_key(self) -> str:
        return self.result.run_key

    @property
    def started_at(self) -> datetime:
        return self.result.started_at

    @property
    def file_name(self) -> str:
        return f"{self.run_key}.json"


def _kind(value: Any) -> str:
    """A file's kind; files written before replays were spooled are runs."""
    kind = value.get("kind", "run") if isinstance(value, dict) else getattr(value, "kind", "run")
    return str(kind)


SpoolEntry = Annotated[
    Annotated[SpooledRun, Tag("run")] | Annotated[ReplayRecord, Tag("replay")],
    Discriminator(_kind),
]
_ENTRY: TypeAdapter[SpooledRun | ReplayRecord] = TypeAdapter(SpoolEntry)


class FlushBusyError(RetrievalEvalError):
    """Another ``db flush`` holds the spool folder's lock: it is saving these runs already."""

    exit_code = 0


def default_spool_dir() -> Path:
    return home_dir() / "spool"


def write_spool(entry: SpooledRun | ReplayRecord, spool_dir: Path | None = None) -> Path:
    """Write one spooled run or replay; return its path. Rewriting the same one replaces its
    file."""
    folder = spool_dir or default_spool_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / entry.file_name
    partial = path.with_name(path.name + ".partial")
    try:
        partial.write_text(entry.model_dump_json(indent=2), encoding="utf-8")
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            partial.unlink(missing_ok=True)
        raise
    return path


@dataclass(frozen=True)
class Kept:
    """Where :func:`keep_spooled` wrote a run or replay (None: nowhere) and, when the spool
    folder could not take it, why and where it went instead (``problem``: a clause for a
    message)."""

    path: Path | None
    problem: str | None = None


def keep_spooled(entry: SpooledRun | ReplayRecord, spool_dir: Path | None = None) -> Kept:
    """Write ``entry`` (a run or a replay) to the spool; when the folder cannot take it
    (OSError: full, read-only), to a new folder of the system's temporary folder, readable by
    this user only (it holds the questions or queries), which ``db flush --spool-dir``
    replays like any spool folder."""
    folder = spool_dir or default_spool_dir()
    try:
        return Kept(write_spool(entry, folder))
    except OSError as exc:
        problem = f"the spool folder {folder} could not take the {entry.kind} ({_why(exc)})"
    fallback: Path | None = None
    try:
        fallback = Path(tempfile.mkdtemp(prefix="retrieval-eval-spool-"))
        path = write_spool(entry, fallback)
    except OSError as exc:
        if fallback is not None:
            with contextlib.suppress(OSError):
                fallback.rmdir()  # empty: write_spool leaves no .partial behind
        where = fallback.parent if fallback is not None else tempfile.gettempdir()
        return Kept(None, f"{problem}, nor could a new folder in {where} ({_why(exc)})")
    return Kept(path, f"{problem}, so it was written to {path} instead")


def _why(exc: OSError) -> str:
    return exc.strerror or type(exc).__name__


def read_spool(path: Path) -> SpooledRun | ReplayRecord:
    """Load one spool file; InvalidInputError names the file and what is wrong with it."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
        entry = _ENTRY.validate_python(data)
        # a hand-edited "\ud800" would pass validation and then fail the save: refuse it here
        json.dumps(data, ensure_ascii=False).encode("utf-8")
        return entry
    except UnicodeEncodeError as exc:
        char = quote(exc.object[exc.start : exc.end])
        raise InvalidInputError(
            f"{path}: not a readable spooled run (it holds a lone surrogate, {char}, which is "
            "not text); fix or remove the file, then run `retrieval-eval db flush` again"
        ) from None
    except (OSError, ValueError, ValidationError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise InvalidInputError(
            f"{path}: not a readable spooled run ({first}); fix or remove the file, then run "
            "`retrieval-eval db flush` again"
        ) from None


def scan_spool(spool_dir: Path | None = None) -> tuple[list[Path], list[tuple[Path, str]]]:
    """The readable spool files of a folder, oldest run first, and the unreadable ones with
    what is wrong with each. Files are read one at a time and only their start time is kept, so
    a backlog of large runs costs the memory of one."""
    folder = spool_dir or default_spool_dir()
    if not folder.is_dir():
        return [], []
    started: list[tuple[datetime, Path]] = []
    unreadable: list[tuple[Path, str]] = []
    for path in sorted(folder.glob("*.json")):
        try:
            started.append((read_spool(path).started_at, path))
        except InvalidInputError as exc:
            unreadable.append((path, str(exc)))
    return [path for _, path in sorted(started, key=lambda item: item[0])], unreadable


def set_aside(path: Path, reason: str) -> Path:
    """Move a spool file that cannot be replayed to ``rejected/`` beside it, with ``reason`` in
    ``<name>.reason``; return where it went (OSError when the folder cannot be written)."""
    folder = path.parent / REJECTED
    folder.mkdir(exist_ok=True)
    target = folder / path.name
    target.with_name(target.name + ".reason").write_text(reason + "\n", encoding="utf-8")
    os.replace(path, target)
    return target


@contextlib.contextmanager
def replay_lock(spool_dir: Path | None = None) -> Iterator[None]:
    """Hold the spool folder's replay lock; FlushBusyError when another process holds it. An
    absent folder needs no lock (there is nothing to replay)."""
    folder = spool_dir or default_spool_dir()
    try:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except FileNotFoundError:
        yield
        return
    except OSError as exc:
        raise InvalidInputError(f"cannot open the spool folder {folder}: {exc.strerror}") from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
                raise
            raise FlushBusyError(
                f"another `retrieval-eval db flush` is flushing {folder} right now; it saves "
                "these runs, nothing to do here"
            ) from None
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock

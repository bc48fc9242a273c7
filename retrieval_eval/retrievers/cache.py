"""An on-disk cache for what an adapter builds from its corpus: an index, a matrix of embeddings.

A DAG run fans one evaluation out over several mapped tasks, each a fresh process; without a
cache each would rebuild the same BM25 index. With it the first build on a machine writes the
entry and every later build there (other batches, later runs) loads it.

- **Where**: ``$RETRIEVAL_EVAL_CACHE``, else ``$RETRIEVAL_EVAL_HOME/cache``
  (``~/.retrieval-eval/cache``). One folder per adapter kind, one entry per key.
- **Key**: a SHA-256 over the adapter kind, its options and the corpus *content* (every file's
  bytes, and for a folder their relative paths), so editing a document or an option builds a new
  entry and an unchanged corpus moved elsewhere still hits.
- **Races**: an entry is written to a temporary folder beside its final place and renamed into
  it; concurrent builders on one machine each build, one rename wins, nobody reads half an entry.
- **Clearing**: delete the folder (``rm -rf ~/.retrieval-eval/cache``); nothing else refers to it.
  Entries are never evicted: an index per corpus revision you evaluate stays until you clear it.
- ``RETRIEVAL_EVAL_CACHE=off`` disables the cache (every build starts from the corpus).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

CACHE_ENV = "RETRIEVAL_EVAL_CACHE"
T = TypeVar("T")


def cache_dir() -> Path | None:
    """The cache root, or None when ``$RETRIEVAL_EVAL_CACHE`` is ``off``."""
    configured = os.environ.get(CACHE_ENV, "")
    if configured.lower() in ("off", "0", "false", "no"):
        return None
    if configured:
        return Path(configured).expanduser()
    from retrieval_eval.paths import home_dir

    return home_dir() / "cache"


def corpus_digest(path: Path) -> str:
    """SHA-256 of a corpus file's bytes, or of a folder's files (relative path and bytes each)."""
    digest = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        if path.is_dir():
            # the name's own bytes: one that is not UTF-8 (surrogate-escaped) is refused by
            # the reader, with its name, not here with a UnicodeEncodeError
            name = file.relative_to(path).as_posix().encode("utf-8", "surrogateescape")
            digest.update(name + b"\0")
        with file.open("rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
        digest.update(b"\0")
    return digest.hexdigest()


def cache_key(kind: str, options: dict[str, Any], corpus: Path) -> str:
    """The key of an entry: adapter kind, options (as sorted JSON) and corpus content."""
    payload = json.dumps([kind, options, corpus_digest(corpus)], sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def cached(kind: str, key: str, build: Callable[[Path], T], load: Callable[[Path], T]) -> T:
    """Load the entry ``kind/key`` when present; else ``build`` it into a new folder and keep it.

    ``build(folder)`` returns the built object after writing what ``load(folder)`` reads back.
    A failed write (read-only home, full disk) still returns the built object.
    """
    root = cache_dir()
    if root is None:
        with tempfile.TemporaryDirectory() as throwaway:
            return build(Path(throwaway))
    entry = root / kind / key
    if entry.is_dir():
        return load(entry)
    try:
        entry.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{key[:12]}-", dir=entry.parent))
    except OSError:
        with tempfile.TemporaryDirectory() as fallback:
            return build(Path(fallback))
    try:
        built = build(scratch)
        with contextlib.suppress(OSError):  # another builder renamed its entry first: keep it
            os.replace(scratch, entry)
        return built
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

"""The demo's index, in versions behind two aliases, for the index-build examples beside it.

An index build writes a new version (``versions/v3/``: here, a copy of the demo corpus) and
points the ``candidate`` alias at it; the evaluation measures the candidate; a promotion points
the ``live`` alias (what production searches) at the same version. An alias is a symbolic link,
swapped at once (a new link renamed over the old one). ``degraded=True`` writes a corrupted
copy instead: every document keeps its id but holds another document's text, so the search
finds the wrong documents, the way a broken build does.

The versions live in ``$RETRIEVAL_EVAL_DEMO_INDEX``, else ``$RETRIEVAL_EVAL_HOME/demo-index``.
``candidate_retriever`` is the ``type: python`` factory of ``index_build.yaml``'s retriever:
BM25 (the demo's settings) over the version the candidate alias points at.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "corpus"
INDEX_ENV = "RETRIEVAL_EVAL_DEMO_INDEX"


def index_root() -> Path:
    """Where the versions and aliases are."""
    configured = os.environ.get(INDEX_ENV)
    if configured:
        return Path(configured)
    from retrieval_eval.paths import home_dir

    return home_dir() / "demo-index"


def build_version(degraded: bool = False) -> str:
    """Write the next version (``v1``, ``v2``, ...) from the demo corpus, point the candidate
    alias at it, and return its name."""
    versions = index_root() / "versions"
    versions.mkdir(parents=True, exist_ok=True)
    number = 1 + max(
        (int(p.name[1:]) for p in versions.glob("v*") if p.name[1:].isdigit()), default=0
    )
    while True:
        target = versions / f"v{number}"
        try:
            target.mkdir()  # exclusive: two builds at once take two numbers
            break
        except FileExistsError:
            number += 1
    shutil.copytree(CORPUS, target, dirs_exist_ok=True)
    if degraded:
        files = sorted(p for p in target.rglob("*") if p.is_file())
        texts = [p.read_bytes() for p in files]
        for path, text in zip(files, texts[1:] + texts[:1], strict=True):
            path.write_bytes(text)  # each id keeps its file, with the next one's text
    swap_alias("candidate", target.name)
    return target.name


def swap_alias(alias: str, version: str) -> None:
    """Point ``alias`` at ``versions/<version>`` in one rename; a version not built is an error."""
    root = index_root()
    if not (root / "versions" / version).is_dir():
        raise FileNotFoundError(
            f"index version {version!r} is not built (no {root / 'versions' / version})"
        )
    link, temporary = root / alias, root / f".{alias}.new"
    temporary.unlink(missing_ok=True)
    temporary.symlink_to(Path("versions") / version, target_is_directory=True)
    temporary.replace(link)


def alias_target(alias: str) -> str | None:
    """The version ``alias`` points at, None before its first swap."""
    link = index_root() / alias
    return Path(os.readlink(link)).name if link.is_symlink() else None


def candidate_retriever(**options: Any) -> Any:
    """BM25 over the candidate version (resolved once, so a swap mid-run does not mix two)."""
    from retrieval_eval.retrievers.lexical import LexicalOptions, LexicalRetriever

    corpus = (index_root() / "candidate").resolve()
    settings = LexicalOptions(corpus=corpus, chunk_size=120, chunk_overlap=20, **options)
    return LexicalRetriever("handbook_candidate", settings)

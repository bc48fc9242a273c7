"""Reading a corpus: a BEIR ``corpus.jsonl`` (``_id``, ``title``, ``text``) or a folder of files.

In a folder, every ``.md`` / ``.txt`` file is a document whose id is its path relative to the
folder, with forward slashes (``billing/refunds.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from retrieval_eval.errors import ConfigError
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.surrogates import PROBLEM, lone_surrogate

TEXT_SUFFIXES = (".md", ".txt")


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str

    @property
    def content(self) -> str:
        return f"{self.title}\n{self.text}" if self.title else self.text


def require_corpus(path: Path) -> Path:
    """``path`` when it is a file or folder; else the error a user sees for a missing corpus."""
    if not (path.is_dir() or path.is_file()):
        raise ConfigError(f"corpus {path} does not exist (a corpus.jsonl file or a folder)")
    return path


def beir_corpus_file(path: Path) -> Path:
    """A BEIR folder's ``corpus.jsonl``; any other path as given."""
    jsonl = path / "corpus.jsonl"
    return jsonl if path.is_dir() and jsonl.is_file() else path


def read_corpus(path: Path) -> list[Document]:
    """Read every document; an unreadable or malformed corpus names the file and line."""
    require_corpus(path)
    docs = list(_read_folder(path) if path.is_dir() else _read_jsonl(path))
    if not docs:
        raise ConfigError(f"corpus {path} holds no documents")
    return docs


def _read_folder(folder: Path) -> Iterator[Document]:
    for file in sorted(folder.rglob("*")):
        if file.is_file() and file.suffix.lower() in TEXT_SUFFIXES:
            doc_id = file.relative_to(folder).as_posix()
            if lone_surrogate(doc_id):  # a file name that is not UTF-8: no id to store or show
                raise ConfigError(
                    f"corpus {folder}: the file name {quote(doc_id)} is not UTF-8 text, and a "
                    "document id must be; rename the file"
                )
            text = file.read_text(encoding="utf-8", errors="replace")
            yield Document(doc_id, "", text)


def _read_jsonl(path: Path) -> Iterator[Document]:
    # text mode as ever (universal newlines, str.strip for blank lines); surrogateescape keeps a
    # byte that is not UTF-8 in its line, so the error names the line instead of escaping as a
    # bare UnicodeDecodeError
    with path.open(encoding="utf-8", errors="surrogateescape") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            if lone_surrogate(line):  # only an undecodable byte makes one in the raw text
                at = next(i for i, c in enumerate(line) if lone_surrogate(c))
                byte = len(line[:at].encode("utf-8", "surrogateescape")) + 1
                raise ConfigError(
                    f"{path}: line {number}: not UTF-8 text (byte {byte}); save the corpus as UTF-8"
                )
            try:
                row = json.loads(line)
                doc_id = str(row["_id"])
                char = lone_surrogate(doc_id)
                if char is not None:
                    raise ValueError(f"'_id' {quote(doc_id)} {PROBLEM.format(char=char)}")
            except (ValueError, KeyError, TypeError) as exc:  # JSONDecodeError is a ValueError
                raise ConfigError(
                    f"{path}: line {number}: expected a JSON object with '_id', 'title', 'text' "
                    f"({exc})"
                ) from None
            yield Document(doc_id, str(row.get("title") or ""), str(row.get("text") or ""))


def texts_of(documents: Iterable[Document], ids: Iterable[str]) -> dict[str, str]:
    """The content (title, newline, text) of each of ``ids`` among ``documents``; ids not there
    are left out: what ``document_texts`` answers for a corpus read from a path."""
    wanted = set(ids)
    return {doc.id: doc.content for doc in documents if doc.id in wanted}


def chunk_words(text: str, size: int, overlap: int) -> list[str]:
    """Split into windows of ``size`` words overlapping by ``overlap`` words."""
    words = text.split()
    if len(words) <= size:
        return [" ".join(words)]
    step = size - overlap
    return [" ".join(words[i : i + size]) for i in range(0, len(words) - overlap, step)]

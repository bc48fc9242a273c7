"""Chunk ids to document ids, for any adapter whose store holds chunks.

``ChunkMapper(separator="#")`` maps ``guide.md#3`` to ``guide.md`` (the text before the LAST
separator); ``ChunkMapper(pattern=r"^(?P<doc>.+)_chunk\\d+$")`` uses the named group ``doc`` (or the
first group). An id that does not look like a chunk id is kept as it is.
"""

from __future__ import annotations

import re


class ChunkMapper:
    def __init__(self, separator: str | None = None, pattern: str | None = None) -> None:
        if (separator is None) == (pattern is None):
            raise ValueError("give exactly one of 'separator' or 'pattern'")
        if separator == "":
            raise ValueError("'separator' must not be empty")
        self.separator = separator
        self.regex = re.compile(pattern) if pattern is not None else None
        if self.regex is not None and self.regex.groups == 0:
            raise ValueError(f"pattern {pattern!r} needs a capturing group for the document id")

    def document_id(self, chunk_id: str) -> str:
        if self.regex is not None:
            match = self.regex.match(chunk_id)
            if not match:
                return chunk_id
            groups = match.groupdict()
            return groups["doc"] if "doc" in groups else match.group(1)
        assert self.separator is not None
        head, sep, _ = chunk_id.rpartition(self.separator)
        return head if sep and head else chunk_id

    def map(self, chunk_ids: list[str]) -> list[str]:
        return [self.document_id(c) for c in chunk_ids]

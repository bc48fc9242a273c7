"""Chunk ids to document ids, for any adapter whose store holds chunks.

``ChunkMapper(separator="#")`` maps ``guide.md#3`` to ``guide.md`` (the text before the LAST
separator); ``ChunkMapper(pattern=r"^(?P<doc>.+)_chunk\\d+$")`` uses the named group ``doc`` (or the
first group). An id that does not look like a chunk id is kept as it is.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, field_validator, model_validator


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


class ChunkRule(BaseModel):
    """The ``separator`` / ``pattern`` options of an adapter that maps chunk ids, checked."""

    separator: str | None = None
    pattern: str | None = None

    @field_validator("separator")
    @classmethod
    def _separator(cls, value: str | None) -> str | None:
        if value == "":
            raise ValueError("must not be empty")
        return value

    @field_validator("pattern")
    @classmethod
    def _pattern(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                ChunkMapper(pattern=value)  # one without a group raises ValueError
            except re.error as exc:
                raise ValueError(f"not a valid regular expression: {exc}") from None
        return value

    @model_validator(mode="after")
    def _not_both(self) -> ChunkRule:
        if self.separator is not None and self.pattern is not None:
            raise ValueError("give either 'separator' or 'pattern', not both")
        return self

    def mapper(self) -> ChunkMapper | None:
        """The mapper the options name, or None when they name no rule."""
        if self.separator is None and self.pattern is None:
            return None
        return ChunkMapper(separator=self.separator, pattern=self.pattern)

"""The ``chunked`` wrapper: score a chunk-grained store at document level.

.. code-block:: yaml

    retrievers:
      vectors:
        type: chunked
        inner: {type: http, url: "http://search:8080/chunks", ids: "results[*].chunk_id"}
        separator: "#"                        # guide.md#3 -> guide.md (text before the LAST #)
        # or: pattern: "^(?P<doc>.+)_chunk\\d+$"  (the named group 'doc', else group 1)

Options: ``inner`` (an inline retriever spec of any type), exactly one of ``separator`` or
``pattern`` (``separator: "#"`` when neither is given), ``fetch_multiplier`` (ask the inner
retriever for ``limit × fetch_multiplier`` chunks, default 1: the scorer already overfetches,
raise it when many chunks of one document crowd the list), ``max_concurrency`` (default: the
inner retriever's).

Edge cases: an id that does not look like a chunk id is kept as it is. The wrapper returns
DISTINCT document ids in the order of their best chunk, at most ``limit``. It keeps the inner
retriever's ``retrieve_many`` and ``retrieve_for`` when it has them (so ``run_file`` and batching
adapters still work wrapped), and closes it. Likewise ``existing_ids`` (dead labels): offered when
the inner retriever has it. An inner retriever that can list its ids (``known_ids()``:
``lexical``, ``dense``, ``run_file``) has them mapped to document ids and compared; one that only
answers for exact ids (``postgres_fts``, ``http``) is asked for the document ids as they are, so
over a chunk-grained table its lookup must accept document ids (an ``http`` lookup endpoint that
answers for documents, or a ``postgres_fts`` id column holding document ids). ``document_texts``
follows the same rule: an inner retriever listing its ids gives the texts of a document's chunks,
joined by a blank line in chunk order (``guide.md#2`` before ``guide.md#10``); one that does not
is asked for the document ids as they are.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Self

from pydantic import ConfigDict, Field, field_validator, model_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.golden.models import GoldenQuestion
from retrieval_eval.retrievers.base import EvaluatableRetriever
from retrieval_eval.retrievers.chunking import ChunkMapper, ChunkRule
from retrieval_eval.retrievers.options import BuildContext, OptionsAdapter


class ChunkedOptions(ChunkRule):
    model_config = ConfigDict(extra="forbid")

    inner: dict[str, Any]
    fetch_multiplier: int = Field(default=1, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)

    @field_validator("inner")
    @classmethod
    def _has_type(cls, value: dict[str, Any]) -> dict[str, Any]:
        if not isinstance(value.get("type"), str):
            raise ValueError("needs a 'type' (an inline retriever spec such as {type: http, ...})")
        return value

    @model_validator(mode="after")
    def _default_rule(self) -> ChunkedOptions:
        if self.separator is None and self.pattern is None:
            self.separator = "#"
        return self


class ChunkedRetriever(OptionsAdapter):
    """Maps an inner retriever's chunk ids to distinct document ids."""

    options_model = ChunkedOptions

    def __init__(
        self,
        identifier: str,
        inner: EvaluatableRetriever,
        mapper: ChunkMapper,
        *,
        fetch_multiplier: int = 1,
        max_concurrency: int | None = None,
    ) -> None:
        self.identifier = identifier
        self.inner = inner
        self.mapper = mapper
        self.fetch_multiplier = fetch_multiplier
        self.max_concurrency = max_concurrency or getattr(inner, "max_concurrency", 1) or 1
        # offer the optional methods only when the inner retriever has them: the scorer
        # decides how to call a retriever by what it has
        if hasattr(inner, "retrieve_many"):
            self.retrieve_many = self._retrieve_many
        if hasattr(inner, "retrieve_for"):
            self.retrieve_for = self._retrieve_for
        if callable(getattr(inner, "existing_ids", None)):
            self.existing_ids = self._existing_ids
            # empty: the dead-label check then names the default (labels.DEFAULT_SOURCE)
            self.existing_ids_source = str(getattr(inner, "existing_ids_source", "") or "")
        if callable(getattr(inner, "document_texts", None)):
            self.document_texts = self._document_texts

    @classmethod
    def from_checked(
        cls, identifier: str, opts: ChunkedOptions, where: str, context: BuildContext
    ) -> Self:
        if context.build is None:
            raise ConfigError(f"{where}: cannot build 'inner'")
        # errors inside the inner spec then name retrievers.<id>.inner.<option>
        inner = context.build(f"{identifier}.inner", opts.inner)
        mapper = ChunkMapper(separator=opts.separator, pattern=opts.pattern)
        return cls(
            identifier,
            inner,
            mapper,
            fetch_multiplier=opts.fetch_multiplier,
            max_concurrency=opts.max_concurrency,
        )

    def _documents(self, chunk_ids: Sequence[str], limit: int) -> list[str]:
        from retrieval_eval.retrievers.ranking import check_ranking, collapse

        return collapse(self.mapper.map(check_ranking(chunk_ids)))[:limit]

    def retrieve(self, question: str, limit: int) -> list[str]:
        return self._documents(self.inner.retrieve(question, limit * self.fetch_multiplier), limit)

    def _retrieve_many(self, questions: Sequence[str], limit: int) -> list[list[str]]:
        rankings = self.inner.retrieve_many(questions, limit * self.fetch_multiplier)  # type: ignore[attr-defined]
        return [self._documents(r, limit) for r in rankings]

    def _retrieve_for(self, question: GoldenQuestion, limit: int) -> list[str]:
        ranking = self.inner.retrieve_for(question, limit * self.fetch_multiplier)  # type: ignore[attr-defined]
        return self._documents(ranking, limit)

    def _existing_ids(self, ids: Iterable[str]) -> set[str]:
        asked = list(ids)
        known_ids = getattr(self.inner, "known_ids", None)
        if callable(known_ids):
            documents = {self.mapper.document_id(k) for k in known_ids()}
            return {i for i in asked if i in documents}
        return set(self.inner.existing_ids(asked)) & set(asked)  # type: ignore[attr-defined]

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        asked = list(dict.fromkeys(ids))
        known_ids = getattr(self.inner, "known_ids", None)
        if not callable(known_ids):
            texts = self.inner.document_texts(asked)  # type: ignore[attr-defined]
            return {i: texts[i] for i in asked if i in texts}
        wanted = set(asked)
        chunks = sorted(
            (k for k in known_ids() if self.mapper.document_id(k) in wanted),
            key=lambda k: (len(k), k),  # chunk order within a document: #2 before #10
        )
        texts = self.inner.document_texts(chunks)  # type: ignore[attr-defined]
        parts: dict[str, list[str]] = {}
        for chunk in chunks:
            if texts.get(chunk):
                parts.setdefault(self.mapper.document_id(chunk), []).append(texts[chunk])
        return {i: "\n\n".join(parts[i]) for i in asked if i in parts}

    def close(self) -> None:
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()

    def __repr__(self) -> str:
        return f"ChunkedRetriever({self.identifier!r}, inner={self.inner!r})"

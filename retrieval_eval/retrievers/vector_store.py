"""What the vector-store adapters (``qdrant``, ``chroma``, ``lancedb``) share.

Each store module declares its connection options on top of :class:`StoreOptions` and implements
four calls on its own client: search by vector, find records by document id (the store's own
filter, no full scan), scan every record (only where chunk ids must be mapped), and the
collection's vector dimension. This module embeds the questions (:mod:`.embedding`), maps chunk
ids to document ids (:mod:`.chunking`), and answers ``existing_ids`` and ``document_texts``.

Ids: ``id_field`` names the payload / metadata field (a column in LanceDB) that holds the document
id; unset, the store's own record id is the document id. Several records (chunks) may hold one
document id: the ranking keeps each document once, at its best chunk, and ``document_texts``
joins its chunks' texts. When the field holds chunk ids (``guide.md#3``), ``separator`` or
``pattern`` maps them as ``chunked`` does; ``existing_ids`` and ``document_texts`` then scan the
collection once, since no store filters on a prefix of an id.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from retrieval_eval.retrievers.chunking import ChunkRule
from retrieval_eval.retrievers.embedding import EmbeddingOptions, QueryEmbedder, build_embedder
from retrieval_eval.retrievers.options import BuildContext

# a record as a store returns it: (the id value it holds, its text or None)
Record = tuple[str, str | None]


class StoreOptions(ChunkRule):
    model_config = ConfigDict(extra="forbid")

    collection: str = Field(min_length=1)
    embedding: EmbeddingOptions
    id_field: str | None = None
    text_field: str | None = "text"
    fetch_multiplier: int = Field(default=1, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)
    timeout_s: float = Field(default=10.0, gt=0)


class VectorStoreRetriever:
    """Embeds each question, searches the store, returns distinct document ids best first."""

    kind: ClassVar[str]
    remote: bool = False

    def __init__(self, identifier: str, options: StoreOptions, embedder: QueryEmbedder) -> None:
        self.identifier = identifier
        self.options = options
        self.embedder = embedder
        self.mapper = options.mapper()
        self.max_concurrency = options.max_concurrency or (4 if self.remote else 1)

    # --- what each store implements -----------------------------------------------------------

    def _search(self, vector: list[float], k: int) -> list[Record]:
        raise NotImplementedError

    def _find(self, ids: list[str]) -> Iterable[Record]:
        """The records whose id value is one of ``ids`` (the store's own filter)."""
        raise NotImplementedError

    def _scan(self) -> Iterator[Record]:
        """Every record (used only when chunk ids are mapped)."""
        raise NotImplementedError

    def _dimension(self) -> int | None:
        raise NotImplementedError

    # --- shared ---------------------------------------------------------------------------------

    @staticmethod
    def embedder_for(
        options: StoreOptions, identifier: str, context: BuildContext
    ) -> QueryEmbedder:
        return build_embedder(
            options.embedding,
            base_dir=context.base_dir,
            where=f"{context.source}: retrievers.{identifier}.embedding",
        )

    def check_dimension(self) -> None:
        """Called at build: a mismatch is a ConfigError before the first question."""
        self.embedder.check_dimension(
            self._dimension(), f"{self.kind} collection {self.options.collection!r}"
        )

    def _document(self, value: str) -> str:
        return self.mapper.document_id(value) if self.mapper is not None else value

    def retrieve(self, question: str, limit: int) -> list[str]:
        return self.retrieve_many([question], limit)[0]

    def retrieve_many(self, questions: Sequence[str], limit: int) -> list[list[str]]:
        from retrieval_eval.evaluation.scoring import collapse

        if not questions:
            return []
        vectors = self.embedder.embed(questions)
        k = limit * self.options.fetch_multiplier
        return [
            collapse([self._document(value) for value, _ in self._search(row.tolist(), k)])[:limit]
            for row in vectors
        ]

    @property
    def existing_ids_source(self) -> str:
        return f"{self.kind} collection {self.options.collection!r}"

    def _records_of(self, ids: list[str]) -> Iterable[Record]:
        if self.mapper is None:
            return self._find(ids)
        wanted = set(ids)
        return (r for r in self._scan() if self._document(r[0]) in wanted)

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are document ids in the collection (dead labels)."""
        asked = list(dict.fromkeys(ids))
        found = {self._document(value) for value, _ in self._records_of(asked)}
        return found & set(asked)

    def document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The stored text of each of ``ids`` that has one (chunks joined by a blank line)."""
        asked = list(dict.fromkeys(ids))
        parts: dict[str, list[str]] = {}
        for value, text in self._records_of(asked):
            if text:
                parts.setdefault(self._document(value), []).append(text)
        return {i: "\n\n".join(parts[i]) for i in asked if i in parts}

    def close(self) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, collection={self.options.collection!r})"


def id_value(value: Any, where: str) -> str:
    """A stored id as the string the scorer compares (ints as their digits)."""
    from retrieval_eval.errors import RetrieverError

    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    raise RetrieverError(f"{where}: a record's id is {type(value).__name__} {value!r}, not text")


def payload_field(payload: Mapping[str, Any] | None, field: str) -> Any:
    """``payload[field]``, where ``field`` may be dotted (``meta.doc_id``)."""
    value: Any = payload or {}
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value

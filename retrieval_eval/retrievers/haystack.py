"""The ``haystack`` adapter: a Haystack pipeline or retriever component built by the user's factory.

.. code-block:: yaml

    retrievers:
      docs_haystack:
        type: haystack
        factory: my_app.search:build_pipeline  # module:attribute, resolved from the cwd
        inputs:                                # the pipeline's run data
          embedder: {text: "{question}"}
          retriever: {top_k: "{limit}"}
        # id_key: doc_id                       # Document.meta key; default: Document.id

Install ``pip install 'retrieval-eval[haystack]'``. Options:

- ``factory``: a ``module:attribute`` path to a ``Pipeline`` or a retriever component (anything
  with ``run``), or a function or class returning one (called with ``kwargs``).
- ``inputs`` (pipelines): the data passed to ``Pipeline.run``; ``{question}`` and ``{limit}``
  are replaced in every string as in the ``http`` adapter's templates (exactly ``"{limit}"``
  becomes an int). ``output``: the component whose ``documents`` are the ranking (default: the
  only output holding ``documents``).
- A component is called as ``run(query=question, top_k=limit)``, or, when its ``run`` takes
  ``query_embedding`` (an embedding retriever), as ``run(query_embedding=..., top_k=limit)`` with
  the question embedded by the ``embedding`` option (:mod:`retrieval_eval.retrievers.embedding`);
  a dimension mismatch with the store's documents is an error at build.
- ``id_key``: the document id is ``Document.meta[id_key]``; unset, ``Document.id``.
  ``separator`` / ``pattern`` map chunk ids as ``chunked`` does.
- ``max_concurrency`` (default 1).

Dead labels and ``document_texts`` ask the document store of the retriever (its
``document_store``) with a filter on the id (``{field: id or meta.<id_key>, operator: in}``).
"""

from __future__ import annotations

import inspect
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ConfigDict, Field

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.chunking import ChunkRule
from retrieval_eval.retrievers.embedding import EmbeddingOptions, QueryEmbedder, build_embedder
from retrieval_eval.retrievers.extras import require
from retrieval_eval.retrievers.options import BuildContext, parse_options
from retrieval_eval.retrievers.registry import instantiate


class HaystackOptions(ChunkRule):
    model_config = ConfigDict(extra="forbid")

    factory: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    inputs: dict[str, Any] | None = None
    output: str | None = None
    embedding: EmbeddingOptions | None = None
    id_key: str | None = Field(default=None, min_length=1)
    fetch_multiplier: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1, ge=1)


class HaystackRetriever:
    """Runs a pipeline (or a component) and reads each returned Document's id."""

    def __init__(
        self,
        identifier: str,
        target: Any,
        options: HaystackOptions,
        where: str,
        embedder: QueryEmbedder | None,
    ) -> None:
        self.identifier = identifier
        self.target = target
        self.options = options
        self.where = where
        self.embedder = embedder
        self.mapper = options.mapper()
        self.max_concurrency = options.max_concurrency
        self.is_pipeline = hasattr(target, "get_component") and hasattr(target, "graph")
        self._by_embedding = not self.is_pipeline and _takes(target, "query_embedding")
        if self.is_pipeline and options.inputs is None:
            raise ConfigError(f"{where}.inputs: a pipeline needs its run data, with {{question}}")
        if self._by_embedding and embedder is None:
            raise ConfigError(
                f"{where}.embedding: {type(target).__name__}.run takes query_embedding: name the "
                "model that embeds the questions"
            )
        self.store = self._document_store()
        if self.store is not None:
            self.existing_ids = self._existing_ids
            self.document_texts = self._document_texts
            self.existing_ids_source = f"Haystack {type(self.store).__name__}"
        if self._by_embedding and embedder is not None and self.store is not None:
            embedder.check_dimension(self._store_dimension(), f"{type(self.store).__name__}")

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> HaystackRetriever:
        where = f"{context.source}: retrievers.{identifier}"
        require("haystack", where)
        opts = parse_options(HaystackOptions, identifier, options, context)
        target = instantiate(opts.factory, opts.kwargs, f"{where}.factory", ("run",))
        embedder = None
        if opts.embedding is not None:
            embedder = build_embedder(
                opts.embedding, base_dir=context.base_dir, where=f"{where}.embedding"
            )
        return cls(identifier, target, opts, where, embedder)

    def _components(self) -> list[Any]:
        if not self.is_pipeline:
            return [self.target]
        return [self.target.get_component(name) for name in self.target.graph.nodes]

    def _document_store(self) -> Any:
        for component in self._components():
            store = getattr(component, "document_store", None)
            if store is not None and hasattr(store, "filter_documents"):
                return store
        return None

    def _store_dimension(self) -> int | None:
        for document in self.store.filter_documents():  # type: ignore[union-attr]
            if document.embedding is not None:
                return len(document.embedding)
        return None

    def _run(self, question: str, k: int) -> Any:
        from retrieval_eval.retrievers.http import fill

        if self.is_pipeline:
            result = self.target.run(data=fill(self.options.inputs, question, k))
            return self._documents_of(result)
        if self._by_embedding:
            vector = self.embedder.embed([question])[0].tolist()  # type: ignore[union-attr]
            return self.target.run(query_embedding=vector, top_k=k).get("documents")
        return self.target.run(query=question, top_k=k).get("documents")

    def _documents_of(self, result: Mapping[str, Any]) -> Any:
        if self.options.output is not None:
            if self.options.output not in result:
                raise RetrieverError(
                    f"{self.where}.output: the pipeline gave no output of "
                    f"{self.options.output!r}; outputs: {', '.join(sorted(result))}"
                )
            return result[self.options.output].get("documents")
        holding = [
            n for n, out in result.items() if isinstance(out, Mapping) and "documents" in out
        ]
        if len(holding) != 1:
            raise RetrieverError(
                f"{self.where}.output: {len(holding)} pipeline outputs hold documents "
                f"({', '.join(holding) or 'none'}); name one"
            )
        return result[holding[0]]["documents"]

    def _document_id(self, document: Any) -> str:
        key = self.options.id_key
        value = (document.meta or {}).get(key) if key else document.id
        if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
            raise RetrieverError(
                f"{self.where}.id_key: a document has no usable "
                f"{f'meta[{key!r}]' if key else 'id'}: {value!r}"
            )
        value = str(value)
        return self.mapper.document_id(value) if self.mapper is not None else value

    def retrieve(self, question: str, limit: int) -> list[str]:
        from retrieval_eval.evaluation.scoring import collapse

        documents = self._run(question, limit * self.options.fetch_multiplier)
        if not isinstance(documents, list):
            raise RetrieverError(f"{self.where}: got {type(documents).__name__}, not documents")
        return collapse([self._document_id(d) for d in documents])[:limit]

    def _stored(self, ids: list[str]) -> dict[str, list[Any]]:
        if self.mapper is None:
            field = f"meta.{self.options.id_key}" if self.options.id_key else "id"
            documents = self.store.filter_documents(  # type: ignore[union-attr]
                filters={"field": field, "operator": "in", "value": ids}
            )
        else:
            documents = self.store.filter_documents()  # type: ignore[union-attr]
        wanted = set(ids)
        found: dict[str, list[Any]] = {}
        for document in documents:
            doc_id = self._document_id(document)
            if doc_id in wanted:
                found.setdefault(doc_id, []).append(document)
        return found

    def _existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are documents in the retriever's document store (dead labels)."""
        asked = list(dict.fromkeys(ids))
        return set(self._stored(asked)) if asked else set()

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """Each document's stored content (chunks joined by a blank line)."""
        asked = list(dict.fromkeys(ids))
        found = self._stored(asked) if asked else {}
        return {
            doc_id: "\n\n".join(d.content for d in docs if d.content)
            for doc_id, docs in found.items()
        }

    def __repr__(self) -> str:
        return f"HaystackRetriever({self.identifier!r}, factory={self.options.factory!r})"


def _takes(component: Any, parameter: str) -> bool:
    run = getattr(component, "run", None)
    try:
        return run is not None and parameter in inspect.signature(run).parameters
    except (TypeError, ValueError):
        return False

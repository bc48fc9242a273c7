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

Install ``pip install 'rag-retrieval-eval[haystack]'``. Options:

- ``factory``: a ``module:attribute`` path to a ``Pipeline`` or a retriever component (anything
  with ``run``), or a function or class returning one (called with ``kwargs``).
- ``inputs`` (pipelines): the data passed to ``Pipeline.run``; ``{question}`` and ``{limit}``
  are replaced in every string as in the ``http`` adapter's templates (exactly ``"{limit}"``
  becomes an int). ``output``: the component whose ``documents`` are the ranking (default: the
  only output holding ``documents``).
- A component is called as ``run(query=question, top_k=limit)``, or, when its ``run`` takes
  ``query_embedding`` (an embedding retriever), as ``run(query_embedding=..., top_k=limit)`` with
  the question embedded by the ``embedding`` option (:mod:`retrieval_eval.retrievers.embedding`);
  a dimension mismatch with the store's documents is an error at build. In a pipeline, the
  component feeding a retriever's ``query_embedding`` is run once on its ``inputs`` at build and
  its vector's length checked against the store's documents the same way.
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

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.embedding import EmbeddingOptions, QueryEmbedder, check_dimension
from retrieval_eval.retrievers.vector_store import (
    FactoryOptions,
    FactoryRetriever,
    Record,
    usable_id,
)


class HaystackOptions(FactoryOptions):
    inputs: dict[str, Any] | None = None
    output: str | None = None
    embedding: EmbeddingOptions | None = None


class HaystackRetriever(FactoryRetriever):
    """Runs a pipeline (or a component) and reads each returned Document's id."""

    type_name = "haystack"
    options_model = HaystackOptions
    wanted = ("run",)
    options: HaystackOptions

    def __init__(
        self,
        identifier: str,
        target: Any,
        options: HaystackOptions,
        where: str,
        embedder: QueryEmbedder | None = None,
    ) -> None:
        super().__init__(identifier, target, options, where, embedder)
        self.target = target
        self.embedder = embedder
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
        if self.is_pipeline and self.store is not None:
            self._check_pipeline_dimension()

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

    def _check_pipeline_dimension(self) -> None:
        """The vector the pipeline's embedder gives a question (the component feeding a
        ``query_embedding`` input, run alone on its ``inputs``) against the store's documents: a
        mismatch is a ConfigError before the first question. An embedder that cannot run alone
        (it takes another component's output) is not checked."""
        from retrieval_eval.retrievers.http import fill

        data = fill(self.options.inputs, "dimension probe", 1)
        for sender, _receiver, edge in self.target.graph.edges(data=True):
            if edge["to_socket"].name != "query_embedding" or sender not in data:
                continue
            try:
                vector = self.target.get_component(sender).run(**data[sender])
                given = len(vector[edge["from_socket"].name])
            except Exception:
                return
            check_dimension(
                f"{self.where}.factory",
                f"the pipeline's {sender!r}",
                given,
                self._store_dimension(),
                type(self.store).__name__,
            )

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

    def _value(self, document: Any) -> str:
        """The document's id value: ``meta[id_key]``, else ``Document.id``."""
        key = self.options.id_key
        raw = (document.meta or {}).get(key) if key else document.id
        value = usable_id(raw)
        if value is None:
            raise RetrieverError(
                f"{self.where}.id_key: a document has no usable "
                f"{f'meta[{key!r}]' if key else 'id'}: {raw!r}"
            )
        return value

    def retrieve(self, question: str, limit: int) -> list[str]:
        documents = self._run(question, limit * self.fetch_multiplier)
        if not isinstance(documents, list):
            raise RetrieverError(f"{self.where}: got {type(documents).__name__}, not documents")
        return self._ranking((self._value(d) for d in documents), limit)

    def _records(self, documents: Iterable[Any]) -> list[Record]:
        return [(self._value(d), d.content) for d in documents]

    def _find(self, ids: list[str]) -> list[Record]:
        field = f"meta.{self.options.id_key}" if self.options.id_key else "id"
        return self._records(
            self.store.filter_documents(  # type: ignore[union-attr]
                filters={"field": field, "operator": "in", "value": ids}
            )
        )

    def _scan(self) -> list[Record]:
        return self._records(self.store.filter_documents())  # type: ignore[union-attr]


def _takes(component: Any, parameter: str) -> bool:
    run = getattr(component, "run", None)
    try:
        return run is not None and parameter in inspect.signature(run).parameters
    except (TypeError, ValueError):
        return False

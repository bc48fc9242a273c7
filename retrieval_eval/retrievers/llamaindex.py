"""The ``llamaindex`` adapter: a LlamaIndex index or retriever built by the user's factory.

.. code-block:: yaml

    retrievers:
      docs_llama:
        type: llamaindex
        factory: my_app.index:load_index      # module:attribute, resolved from the cwd
        kwargs: {persist_dir: storage/}        # passed to the factory when it is called
        # id_key: source_id                    # metadata key; default: the node's ref_doc_id

Install ``pip install 'rag-retrieval-eval[llamaindex]'``. Options:

- ``factory``: a ``module:attribute`` path to an index (anything with ``as_retriever``, such as
  ``VectorStoreIndex``), a retriever (anything with ``retrieve``), or a function or class that
  returns one (called with ``kwargs``). LlamaIndex embeds the questions with the index's own
  embedding model, so there is no ``embedding`` option; where the index's store shows its
  vectors (the default ``SimpleVectorStore``), a model giving vectors of another length is an
  error at build, naming ``factory``.
- ``id_key``: the document id is ``node.metadata[id_key]``; unset, the node's ``ref_doc_id``
  (the document the chunk was split from), else its node id. ``separator`` / ``pattern`` map
  chunk ids as ``chunked`` does.
- ``max_concurrency`` (default 1).

With an index, each limit gets ``as_retriever(similarity_top_k=limit × fetch_multiplier)``; a
retriever returns what it is configured to and the list is cut to the limit. Dead labels and
``document_texts`` read the index's docstore (``ref_doc_info``, the nodes' texts); they are
offered when the factory gives an index, or a retriever that keeps one (``_index``).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator
from typing import Any

from retrieval_eval.errors import RetrieverError
from retrieval_eval.retrievers.embedding import check_dimension
from retrieval_eval.retrievers.vector_store import (
    FactoryOptions,
    FactoryRetriever,
    Record,
    usable_id,
)


class LlamaIndexOptions(FactoryOptions):
    """``factory``, ``kwargs``, ``id_key`` and the options every adapter here takes."""


class LlamaIndexRetriever(FactoryRetriever):
    """Calls a LlamaIndex retriever and reads each node's document id."""

    type_name = "llamaindex"
    options_model = LlamaIndexOptions
    wanted = ("as_retriever", "retrieve")
    options: LlamaIndexOptions

    def __init__(self, identifier: str, target: Any, options: LlamaIndexOptions, *rest: Any):
        super().__init__(identifier, target, options, *rest)  # where; no embedder: the index's
        self.index = target if hasattr(target, "as_retriever") else getattr(target, "_index", None)
        self._retriever = None if hasattr(target, "as_retriever") else target
        self._by_k: dict[int, Any] = {}
        self._lock = threading.Lock()
        if self.index is not None and hasattr(self.index, "docstore"):
            self.existing_ids = self._existing_ids
            self.document_texts = self._document_texts
            self.existing_ids_source = "LlamaIndex docstore"
        self._check_dimension()

    def _check_dimension(self) -> None:
        """The questions' vectors against the ones the index's store holds, where the store shows
        them (LlamaIndex's own ``SimpleVectorStore``): a mismatch (an index loaded with another
        embedding model) is a ConfigError before the first question, not an error per question."""
        holder = self._retriever if self._retriever is not None else self.index
        model = getattr(holder, "_embed_model", None)
        store = getattr(self.index, "vector_store", None)
        stored = getattr(getattr(store, "data", None), "embedding_dict", None)
        if model is None or not stored:
            return
        check_dimension(
            f"{self.where}.factory",
            f"the embedding model {type(model).__name__}",
            len(model.get_query_embedding("dimension probe")),
            len(next(iter(stored.values()))),
            f"the index's {type(store).__name__}",
        )

    def _retriever_for(self, k: int) -> Any:
        if self._retriever is not None:
            return self._retriever
        with self._lock:
            if k not in self._by_k:
                self._by_k[k] = self.index.as_retriever(similarity_top_k=k)  # type: ignore[union-attr]
            return self._by_k[k]

    def _value(self, node: Any) -> str:
        """The node's id value: ``metadata[id_key]``, else its ``ref_doc_id``, else its node id."""
        key = self.options.id_key
        raw = node.metadata.get(key) if key else (node.ref_doc_id or node.node_id)
        value = usable_id(raw)
        if value is None:
            what = f"metadata[{key!r}]" if key else "ref_doc_id / node id"
            raise RetrieverError(f"{self.where}.id_key: a node has no usable {what}: {raw!r}")
        return value

    def retrieve(self, question: str, limit: int) -> list[str]:
        results = self._retriever_for(limit * self.fetch_multiplier).retrieve(question)
        return self._ranking((self._value(r.node) for r in results), limit)

    def _find(self, ids: list[str]) -> Iterator[Record]:
        if self.options.id_key is not None:  # a metadata key: the docstore cannot filter on it
            wanted = set(ids)
            yield from (record for record in self._scan() if record[0] in wanted)
            return
        docstore = self.index.docstore  # type: ignore[union-attr]
        infos = docstore.get_all_ref_doc_info() or {}
        for doc_id in dict.fromkeys(ids):
            if doc_id in infos:
                for node in docstore.get_nodes(infos[doc_id].node_ids):
                    yield doc_id, node.get_content()

    def _scan(self) -> Iterable[Record]:
        nodes = self.index.docstore.docs.values()  # type: ignore[union-attr]
        return ((self._value(node), node.get_content()) for node in nodes)

"""The ``llamaindex`` adapter: a LlamaIndex index or retriever built by the user's factory.

.. code-block:: yaml

    retrievers:
      docs_llama:
        type: llamaindex
        factory: my_app.index:load_index      # module:attribute, resolved from the cwd
        kwargs: {persist_dir: storage/}        # passed to the factory when it is called
        # id_key: source_id                    # metadata key; default: the node's ref_doc_id

Install ``pip install 'retrieval-eval[llamaindex]'``. Options:

- ``factory``: a ``module:attribute`` path to an index (anything with ``as_retriever``, such as
  ``VectorStoreIndex``), a retriever (anything with ``retrieve``), or a function or class that
  returns one (called with ``kwargs``). LlamaIndex embeds the questions with the index's own
  embedding model, so there is no ``embedding`` option.
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
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import ConfigDict, Field

from retrieval_eval.errors import RetrieverError
from retrieval_eval.retrievers.chunking import ChunkRule
from retrieval_eval.retrievers.extras import require
from retrieval_eval.retrievers.options import BuildContext, parse_options
from retrieval_eval.retrievers.registry import instantiate


class LlamaIndexOptions(ChunkRule):
    model_config = ConfigDict(extra="forbid")

    factory: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    id_key: str | None = Field(default=None, min_length=1)
    fetch_multiplier: int = Field(default=1, ge=1)
    max_concurrency: int = Field(default=1, ge=1)


class LlamaIndexRetriever:
    """Calls a LlamaIndex retriever and reads each node's document id."""

    def __init__(self, identifier: str, target: Any, options: LlamaIndexOptions, where: str):
        self.identifier = identifier
        self.options = options
        self.where = where
        self.mapper = options.mapper()
        self.max_concurrency = options.max_concurrency
        self.index = target if hasattr(target, "as_retriever") else getattr(target, "_index", None)
        self._retriever = None if hasattr(target, "as_retriever") else target
        self._by_k: dict[int, Any] = {}
        self._lock = threading.Lock()
        if self.index is not None and hasattr(self.index, "docstore"):
            self.existing_ids = self._existing_ids
            self.document_texts = self._document_texts
            self.existing_ids_source = "LlamaIndex docstore"

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> LlamaIndexRetriever:
        where = f"{context.source}: retrievers.{identifier}"
        require("llamaindex", where)
        opts = parse_options(LlamaIndexOptions, identifier, options, context)
        target = instantiate(
            opts.factory, opts.kwargs, f"{where}.factory", ("as_retriever", "retrieve")
        )
        return cls(identifier, target, opts, where)

    def _retriever_for(self, k: int) -> Any:
        if self._retriever is not None:
            return self._retriever
        with self._lock:
            if k not in self._by_k:
                self._by_k[k] = self.index.as_retriever(similarity_top_k=k)  # type: ignore[union-attr]
            return self._by_k[k]

    def _document(self, node: Any) -> str:
        key = self.options.id_key
        value = node.metadata.get(key) if key else (node.ref_doc_id or node.node_id)
        if not isinstance(value, str | int) or isinstance(value, bool) or value == "":
            what = f"metadata[{key!r}]" if key else "ref_doc_id / node id"
            raise RetrieverError(f"{self.where}.id_key: a node has no usable {what}: {value!r}")
        value = str(value)
        return self.mapper.document_id(value) if self.mapper is not None else value

    def retrieve(self, question: str, limit: int) -> list[str]:
        from retrieval_eval.evaluation.scoring import collapse

        results = self._retriever_for(limit * self.options.fetch_multiplier).retrieve(question)
        return collapse([self._document(r.node) for r in results])[:limit]

    def _nodes(self) -> Iterable[Any]:
        return self.index.docstore.docs.values()  # type: ignore[union-attr]

    def _nodes_of(self, ids: Sequence[str]) -> dict[str, list[Any]]:
        wanted = set(ids)
        found: dict[str, list[Any]] = {}
        if self.options.id_key is None and self.mapper is None:
            infos = self.index.docstore.get_all_ref_doc_info() or {}  # type: ignore[union-attr]
            for doc_id in wanted & set(infos):
                found[doc_id] = self.index.docstore.get_nodes(infos[doc_id].node_ids)  # type: ignore[union-attr]
            return found
        for node in self._nodes():
            doc_id = self._document(node)
            if doc_id in wanted:
                found.setdefault(doc_id, []).append(node)
        return found

    def _existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are documents in the index's docstore (dead labels)."""
        return set(self._nodes_of(list(ids)))

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """Each document's nodes' texts, joined by a blank line."""
        return {
            doc_id: "\n\n".join(n.get_content() for n in nodes)
            for doc_id, nodes in self._nodes_of(list(ids)).items()
        }

    def __repr__(self) -> str:
        return f"LlamaIndexRetriever({self.identifier!r}, factory={self.options.factory!r})"

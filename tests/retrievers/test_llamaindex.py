"""The llamaindex adapter over a real in-memory VectorStoreIndex with a deterministic embedding."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_eval.errors import ConfigError

from .vector_corpus import CHUNKS, DIM, embed
from .vector_testing import build, check_dead_labels, check_rankings, check_texts, require_extra

FACTORY = "retrievers.test_llamaindex:"


def build_index(dim: int = DIM) -> Any:
    """The corpus as nodes whose source document is the chunk's document (ref_doc_id); the
    questions are embedded in ``dim`` dimensions."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import NodeRelationship, RelatedNodeInfo, TextNode

    class HashedEmbedding(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            return embed([query], dim)[0].tolist()

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed([text])[0].tolist()

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

    nodes = [
        TextNode(
            id_=chunk,
            text=text,
            metadata={"doc_id": doc, "chunk": chunk},
            excluded_embed_metadata_keys=["doc_id", "chunk"],  # embed the text alone
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=doc)},
        )
        for chunk, doc, text in CHUNKS
    ]
    return VectorStoreIndex(nodes, embed_model=HashedEmbedding())


def build_retriever() -> Any:
    return build_index().as_retriever(similarity_top_k=5)


def build_index_of_another_model() -> Any:
    """An index whose questions are embedded in twice the dimensions of its stored vectors."""
    return build_index(2 * DIM)


def build_retriever_of_another_model() -> Any:
    return build_index(2 * DIM).as_retriever(similarity_top_k=5)


def spec(factory: str, **options: Any) -> dict[str, Any]:
    require_extra("llama_index.core", "llamaindex")
    return {"type": "llamaindex", "factory": FACTORY + factory, **options}


def test_an_index_ranks_by_ref_doc_id_with_dead_labels_and_texts() -> None:
    retriever = build(spec("build_index"))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)


def test_a_metadata_key_or_mapped_chunk_ids() -> None:
    for options in ({"id_key": "doc_id"}, {"id_key": "chunk", "separator": "#"}):
        retriever = build(spec("build_index", **options))
        check_rankings(retriever)
        check_dead_labels(retriever)
        check_texts(retriever)


def test_a_retriever_keeps_its_own_top_k_and_its_index_for_labels() -> None:
    retriever = build(spec("build_retriever"))
    assert retriever.retrieve("how often should api keys rotate", 1) == ["security.md"]
    check_dead_labels(retriever)


def test_wrong_factory_and_missing_id_key_are_named() -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.factory: .*no attribute"):
        build(spec("nothing_here"))
    retriever = build(spec("build_index", id_key="nope"))
    with pytest.raises(Exception, match=r"retrievers\.docs\.id_key: a node has no usable"):
        retriever.retrieve("lint", 3)


def test_an_embedding_model_of_another_dimension_is_an_error_before_the_first_question() -> None:
    for factory in ("build_index_of_another_model", "build_retriever_of_another_model"):
        with pytest.raises(
            ConfigError,
            match=r"retrievers\.docs\.factory: the embedding model HashedEmbedding gives "
            r"128-dimensional vectors but the index's SimpleVectorStore holds 64-dim",
        ):
            build(spec(factory))

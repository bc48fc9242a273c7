"""The haystack adapter over a real InMemoryDocumentStore and embedding retriever."""

from __future__ import annotations

from typing import Any

import pytest

from retrieval_eval.errors import ConfigError

from .vector_corpus import CHUNKS, DIM, EMBEDDING, embed
from .vector_testing import build, check_dead_labels, check_rankings, check_texts, require_extra

FACTORY = "retrievers.test_haystack:"
INPUTS = {"embedder": {"text": "{question}"}, "retriever": {"top_k": "{limit}"}}


def build_retriever() -> Any:
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    vectors = embed([text for _, _, text in CHUNKS])
    store.write_documents(
        [
            Document(id=chunk, content=text, meta={"doc_id": doc}, embedding=vectors[n].tolist())
            for n, (chunk, doc, text) in enumerate(CHUNKS)
        ]
    )
    return InMemoryEmbeddingRetriever(document_store=store)


def build_pipeline(dim: int = DIM) -> Any:
    """A hashed-words embedder (``dim`` dimensions) feeding the embedding retriever."""
    from haystack import Pipeline, component

    @component
    class HashedEmbedder:
        @component.output_types(embedding=list[float])
        def run(self, text: str) -> dict[str, Any]:
            return {"embedding": embed([text], dim)[0].tolist()}

    pipeline = Pipeline()
    pipeline.add_component("embedder", HashedEmbedder())
    pipeline.add_component("retriever", build_retriever())
    pipeline.connect("embedder.embedding", "retriever.query_embedding")
    return pipeline


def build_pipeline_of_another_model() -> Any:
    return build_pipeline(2 * DIM)


def spec(factory: str, **options: Any) -> dict[str, Any]:
    require_extra("haystack", "haystack")
    return {"type": "haystack", "factory": FACTORY + factory, "id_key": "doc_id", **options}


def test_an_embedding_retriever_with_the_embedding_option() -> None:
    retriever = build(spec("build_retriever", embedding=EMBEDDING))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)


def test_a_pipeline_with_its_own_embedder_and_mapped_chunk_ids() -> None:
    for options in ({}, {"id_key": None, "separator": "#", "output": "retriever"}):
        retriever = build(spec("build_pipeline", inputs=INPUTS, **options))
        check_rankings(retriever)
        check_dead_labels(retriever)
        check_texts(retriever)


def test_errors_name_the_option() -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .*query_embedding"):
        build(spec("build_retriever"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .* 128-dim.* 64-dim"):
        build(spec("build_retriever", embedding="retrievers.vector_corpus:embed_wide"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.inputs: a pipeline needs"):
        build(spec("build_pipeline"))
    retriever = build(spec("build_pipeline", inputs=INPUTS, output="embedder"))
    with pytest.raises(Exception, match=r"retrievers\.docs\.output"):
        retriever.retrieve("lint", 3)


def test_a_pipeline_embedder_of_another_dimension_is_an_error_before_the_first_question() -> None:
    with pytest.raises(
        ConfigError,
        match=r"retrievers\.docs\.factory: the pipeline's 'embedder' gives 128-dimensional "
        r"vectors but InMemoryDocumentStore holds 64-dim",
    ):
        build(spec("build_pipeline_of_another_model", inputs=INPUTS))

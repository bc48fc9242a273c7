"""The lancedb adapter over a real LanceDB table on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.errors import ConfigError

from .vector_corpus import CHUNKS, EMBEDDING, embed
from .vector_testing import build, check_dead_labels, check_rankings, check_texts, require_extra


@pytest.fixture
def store(tmp_path: Path) -> Path:
    require_extra("lancedb", "lancedb")
    import lancedb

    path = tmp_path / "lance"
    vectors = embed([text for _, _, text in CHUNKS])
    rows = [
        {"vector": vectors[n].tolist(), "doc_id": doc, "chunk": chunk, "text": text, "lang": "en"}
        for n, (chunk, doc, text) in enumerate(CHUNKS)
    ]
    lancedb.connect(str(path)).create_table("docs", data=rows)
    return path


def spec(store: Path, **options: Any) -> dict[str, Any]:
    return {
        "type": "lancedb",
        "uri": str(store),
        "collection": "docs",
        "id_field": "doc_id",
        "embedding": EMBEDDING,
        **options,
    }


def test_rankings_dead_labels_and_texts_by_the_document_id_column(store: Path) -> None:
    retriever = build(spec(store, where="lang = 'en'"))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)
    assert retriever.existing_ids(["it's"]) == set()  # quoted, not SQL


def test_chunk_id_column_maps_to_documents(store: Path) -> None:
    retriever = build(spec(store, id_field="chunk", separator="#"))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)


def test_missing_table_wrong_column_and_dimension_are_named(store: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.collection: no table 'faq'.*docs"):
        build(spec(store, collection="faq"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.id_field: .*no column 'docid'"):
        build(spec(store, id_field="docid"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .* 128-dim.* 64-dim"):
        build(spec(store, embedding="retrievers.vector_corpus:embed_wide"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.uri: no LanceDB folder"):
        build(spec(store.parent / "nowhere"))

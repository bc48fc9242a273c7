"""The qdrant adapter over a real Qdrant in local mode (``QdrantClient(path=...)``)."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.errors import ConfigError

from .vector_corpus import CHUNKS, DIM, EMBEDDING, embed
from .vector_testing import (
    build,
    check_dead_labels,
    check_rankings,
    check_texts,
    free_port,
    require_extra,
)


@pytest.fixture
def store(tmp_path: Path) -> Path:
    require_extra("qdrant_client", "qdrant")
    from qdrant_client import QdrantClient, models

    path = tmp_path / "qdrant"
    client = QdrantClient(path=str(path))
    client.create_collection(
        "docs", vectors_config=models.VectorParams(size=DIM, distance=models.Distance.COSINE)
    )
    vectors = embed([text for _, _, text in CHUNKS])
    client.upsert(
        "docs",
        points=[
            models.PointStruct(
                id=i, vector=vectors[i].tolist(), payload={"doc_id": d, "chunk": c, "text": t}
            )
            for i, (c, d, t) in enumerate(CHUNKS)
        ],
    )
    client.close()
    return path


def spec(store: Path, **options: Any) -> dict[str, Any]:
    return {
        "type": "qdrant",
        "path": str(store),
        "collection": "docs",
        "id_field": "doc_id",
        "embedding": EMBEDDING,
        **options,
    }


def test_rankings_dead_labels_and_texts_by_the_payload_document_id(store: Path) -> None:
    retriever = build(spec(store))
    try:
        assert retriever.max_concurrency == 1  # local mode: one process holds the folder
        check_rankings(retriever)
        check_dead_labels(retriever)
        check_texts(retriever)
    finally:
        retriever.close()


def test_chunk_ids_in_the_payload_map_to_documents(store: Path) -> None:
    retriever = build(spec(store, id_field="chunk", separator="#"))
    try:
        check_rankings(retriever)
        check_dead_labels(retriever)
        check_texts(retriever)
    finally:
        retriever.close()


def test_point_ids_as_document_ids(store: Path) -> None:
    retriever = build(spec(store, id_field=None))
    try:
        assert retriever.retrieve("how often should api keys rotate", 1) == ["3"]
        assert retriever.existing_ids(["3", "99", "not-a-point-id"]) == {"3"}
        assert retriever.document_texts(["3"]) == {"3": CHUNKS[3][2]}
    finally:
        retriever.close()


def test_a_filter_restricts_the_search(store: Path) -> None:
    only_billing = {"must": [{"key": "doc_id", "match": {"value": "billing.md"}}]}
    retriever = build(spec(store, filter=only_billing))
    try:
        assert retriever.retrieve("how do I install the package with pip", 5) == ["billing.md"]
    finally:
        retriever.close()


def test_missing_collection_is_named_with_the_collections_there(store: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"retrievers\.docs\.collection: no collection 'faq'.*docs"
    ):
        build(spec(store, collection="faq"))


def test_wrong_id_field_is_named_with_the_payload_fields(store: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.id_field: .*'docid'.*chunk, doc_id"):
        build(spec(store, id_field="docid"))


def test_dimension_mismatch_is_an_error_before_the_first_question(store: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .* 128-dim.* 64-dim"):
        build(spec(store, embedding="retrievers.vector_corpus:embed_wide"))


def test_unreachable_server_names_the_url_and_never_the_key(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("QDRANT_KEY", "s3cret-qdrant-key")
    url = f"http://127.0.0.1:{free_port()}"
    options = spec(store, url=url, api_key_from_env="QDRANT_KEY", timeout_s=2)
    del options["path"]
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.url: cannot reach Qdrant") as info:
        build(options)
    assert "s3cret" not in str(info.value)


def test_options_are_checked_with_the_option_named(store: Path) -> None:
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.?: give 'path'"):
        build({"type": "qdrant", "collection": "docs", "embedding": EMBEDDING})
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .*exactly one of"):
        build(spec(store, embedding={"query_prefix": "q: "}))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.path: no Qdrant local-mode folder"):
        build(spec(store.parent / "nowhere"))


def test_an_embedding_module_beside_the_config_is_found_through_paths(
    store: Path, tmp_path: Path
) -> None:
    """A native adapter's ``paths:`` (relative to the config's folder) puts the folder of its
    ``embedding:`` function on sys.path, as ``type: python``'s does; without it, the module is
    not found, and a missing folder is named."""
    from retrieval_eval.retrievers.registry import RetrieverRegistry

    module = f"embed_beside_{uuid.uuid4().hex[:8]}"
    lib = tmp_path / "conf" / "lib"
    lib.mkdir(parents=True)
    (lib / f"{module}.py").write_text(
        "from retrievers.vector_corpus import embed\n\n\n"
        "def queries(texts):\n    return embed(texts)\n"
    )

    def built(**options: Any) -> Any:
        specs = {"docs": spec(store, embedding=f"{module}:queries", **options)}
        return RetrieverRegistry(specs, base_dir=tmp_path / "conf", source="cfg.yaml").build("docs")

    with pytest.raises(ConfigError, match=rf"embedding\.function: cannot import module '{module}'"):
        built()
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.paths: .*no such folder"):
        built(paths=["nowhere"])
    retriever = built(paths=["lib"])
    try:
        check_rankings(retriever)
    finally:
        retriever.close()

"""The chroma adapter over a real Chroma: a persistent client, and a server the test starts."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.errors import ConfigError

from .vector_corpus import CHUNKS, EMBEDDING, embed
from .vector_testing import (
    build,
    check_dead_labels,
    check_rankings,
    check_texts,
    free_port,
    require_extra,
)


def load(client: Any) -> None:
    collection = client.create_collection(
        "docs", metadata={"hnsw:space": "cosine"}, embedding_function=None
    )
    collection.add(
        ids=[chunk for chunk, _, _ in CHUNKS],
        embeddings=embed([text for _, _, text in CHUNKS]).tolist(),
        metadatas=[{"doc_id": doc, "lang": "en"} for _, doc, _ in CHUNKS],
        documents=[text for _, _, text in CHUNKS],
    )


@pytest.fixture
def store(tmp_path: Path) -> Path:
    require_extra("chromadb", "chroma")
    import chromadb

    path = tmp_path / "chroma"
    load(chromadb.PersistentClient(path=str(path)))
    return path


def spec(store: Path, **options: Any) -> dict[str, Any]:
    return {
        "type": "chroma",
        "path": str(store),
        "collection": "docs",
        "id_field": "doc_id",
        "embedding": EMBEDDING,
        **options,
    }


def test_rankings_dead_labels_and_texts_by_the_metadata_document_id(store: Path) -> None:
    retriever = build(spec(store))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)


def test_chroma_ids_as_chunk_ids_map_to_documents(store: Path) -> None:
    retriever = build(spec(store, id_field=None, separator="#", where={"lang": "en"}))
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)


def test_missing_collection_wrong_id_field_and_dimension_are_named(store: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"retrievers\.docs\.collection: no collection 'faq'.*docs"
    ):
        build(spec(store, collection="faq"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.id_field: .*'docid'.*doc_id, lang"):
        build(spec(store, id_field="docid"))
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.embedding: .* 128-dim.* 64-dim"):
        build(spec(store, embedding="retrievers.vector_corpus:embed_wide"))


def test_unreachable_server_is_named_and_the_token_never_shown(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CHROMA_TOKEN", "s3cret-chroma-token")
    options = spec(store, host="127.0.0.1", port=free_port(), timeout_s=2)
    options["headers_from_env"] = {"X-Chroma-Token": "CHROMA_TOKEN"}
    del options["path"]
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.host: cannot reach Chroma") as info:
        build(options)
    assert "s3cret" not in str(info.value)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """``chroma run`` on a free loopback port, stopped after the test."""
    require_extra("chromadb", "chroma")
    chroma = Path(sys.executable).with_name("chroma")
    command = str(chroma) if chroma.exists() else shutil.which("chroma")
    if command is None:
        pytest.skip("the chromadb package installed no 'chroma' command to start a server")
    port = free_port()
    log = (tmp_path / "chroma.log").open("wb")
    process = subprocess.Popen(
        [
            command,
            "run",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--path",
            str(tmp_path / "srv"),
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        import httpx

        deadline = time.monotonic() + 60
        while True:
            if process.poll() is not None:
                pytest.skip(f"'chroma run' exited ({process.returncode}): see {log.name}")
            try:
                httpx.get(f"http://127.0.0.1:{port}/api/v2/heartbeat", timeout=1).raise_for_status()
                break
            except httpx.HTTPError:
                if time.monotonic() > deadline:
                    pytest.skip("'chroma run' did not answer within 60 s")
                time.sleep(0.3)
        yield port
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_a_chroma_server_started_here(server: int) -> None:
    import chromadb

    load(chromadb.HttpClient(host="127.0.0.1", port=server))
    retriever = build(
        {
            "type": "chroma",
            "host": "127.0.0.1",
            "port": server,
            "collection": "docs",
            "id_field": "doc_id",
            "embedding": EMBEDDING,
        }
    )
    assert retriever.max_concurrency == 4
    assert retriever.client._server._session.timeout.read == 10.0  # timeout_s reaches httpx
    check_rankings(retriever)
    check_dead_labels(retriever)
    check_texts(retriever)
    with pytest.raises(ConfigError, match=r"retrievers\.docs\.collection: no collection 'faq'"):
        build(
            {
                "type": "chroma",
                "host": "127.0.0.1",
                "port": server,
                "collection": "faq",
                "embedding": EMBEDDING,
            }
        )

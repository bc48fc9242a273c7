"""The query embedding the vector-store adapters share: an HTTP endpoint (a real server on
127.0.0.1), a ``module:function``, the in-memory cache, and the errors they name."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.embedding import build_embedder

from .vector_corpus import DIM, embed
from .vector_testing import free_port

WHERE = "cfg.yaml: retrievers.docs.embedding"
SECRET = "Bearer s3cret-embedding-key"


class EmbeddingServer:
    """OpenAI-shaped embeddings of the hashed corpus embedding; keeps every request it got.
    A text ``fail`` makes it answer 500 quoting the request's Authorization header."""

    def __init__(self) -> None:
        self.requests: list[tuple[dict[str, Any], dict[str, str]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.requests.append((body, dict(self.headers)))
                if "fail" in body["input"]:
                    status, answer = 500, f"upstream says: {self.headers.get('Authorization')}"
                else:
                    vectors = (3 * embed(body["input"])).tolist()  # not unit length
                    status, answer = 200, json.dumps({"data": [{"embedding": v} for v in vectors]})
                payload = answer.encode()
                self.send_response(status)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: Any) -> None:
                return None

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1/embeddings"

    def texts(self) -> list[list[str]]:
        return [body["input"] for body, _ in self.requests]


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    running = EmbeddingServer()
    thread = threading.Thread(target=running.http.serve_forever, daemon=True)
    thread.start()
    yield running
    running.http.shutdown()
    running.http.server_close()


def http_embedder(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch, **options: Any) -> Any:
    server.requests.clear()
    monkeypatch.setenv("EMBED_AUTH", SECRET)
    http = {
        "url": server.url,
        "headers_from_env": {"Authorization": "EMBED_AUTH"},
        "batch_size": 2,
        **options.pop("http", {}),
    }
    return build_embedder({"http": http, **options}, base_dir=Path.cwd(), where=WHERE)


def test_an_http_endpoint_embeds_in_batches_with_the_secret_header(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = http_embedder(server, monkeypatch, query_prefix="query: ")
    texts = ["install the package", "rotate api keys", "lint", "refunds", "nightly dag"]
    matrix = embedder.embed(texts)
    assert matrix.shape == (5, DIM) and matrix.dtype == np.float32
    assert np.allclose(np.linalg.norm(matrix, axis=1), 1.0)  # normalised by default
    assert np.allclose(matrix, embed(["query: " + t for t in texts]), atol=1e-6)
    assert [len(batch) for batch in server.texts()] == [2, 2, 1]
    assert server.texts()[0] == ["query: install the package", "query: rotate api keys"]
    assert {headers["Authorization"] for _, headers in server.requests} == {SECRET}


def test_a_question_asked_again_is_not_embedded_again(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = http_embedder(server, monkeypatch, cache_size=2)
    first = embedder.embed(["a b", "c d"])
    assert np.array_equal(embedder.embed(["c d", "a b"]), first[::-1])
    assert server.texts() == [["a b", "c d"]]  # the second call asked nothing
    embedder.embed(["e f"])  # a third question pushes out the least recently used ("c d")
    embedder.embed(["a b", "c d"])
    assert server.texts() == [["a b", "c d"], ["e f"], ["c d"]]


def test_a_server_error_is_named_and_the_secret_header_never_shown(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = http_embedder(server, monkeypatch)
    with pytest.raises(RetrieverError, match=rf"{WHERE}\.http: HTTP 500 from ") as info:
        embedder.embed(["fail"])
    assert "upstream says" in str(info.value)
    assert "s3cret" not in str(info.value)


def test_vectors_not_where_the_expression_says_are_named(
    server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    embedder = http_embedder(server, monkeypatch, http={"vectors": "results"})
    with pytest.raises(RetrieverError, match=rf"{WHERE}\.http\.vectors: 'results' gave NoneType"):
        embedder.embed(["a question"])


def test_an_unreachable_endpoint_names_the_url_option(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EMBED_AUTH", SECRET)
    url = f"http://127.0.0.1:{free_port()}/v1/embeddings"
    embedder = build_embedder(
        {"http": {"url": url, "headers_from_env": {"Authorization": "EMBED_AUTH"}}},
        base_dir=Path.cwd(),
        where=WHERE,
    )
    with pytest.raises(RetrieverError, match=rf"{WHERE}\.http: cannot reach .*check 'url'"):
        embedder.embed(["a question"])


def test_a_missing_header_variable_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EMBED_AUTH", raising=False)
    with pytest.raises(
        ConfigError,
        match=rf"{WHERE}\.http\.headers_from_env\.Authorization: environment variable EMBED_AUTH",
    ):
        build_embedder(
            {
                "http": {
                    "url": "http://127.0.0.1:9",
                    "headers_from_env": {"Authorization": "EMBED_AUTH"},
                }
            },
            base_dir=Path.cwd(),
            where=WHERE,
        )


def wrong_shape(texts: list[str]) -> list[list[float]]:
    return [[1.0, 0.0]]  # one vector, whatever the number of texts


def test_a_function_giving_the_wrong_number_of_vectors_is_named() -> None:
    embedder = build_embedder(
        "retrievers.test_embedding:wrong_shape", base_dir=Path.cwd(), where=WHERE
    )
    with pytest.raises(RetrieverError, match=r"returned an array of shape \(1, 2\) for 3 texts"):
        embedder.embed(["a", "b", "c"])


def test_a_dimension_other_than_the_collection_is_a_config_error() -> None:
    embedder = build_embedder("retrievers.vector_corpus:embed", base_dir=Path.cwd(), where=WHERE)
    embedder.check_dimension(DIM, "the collection")  # the same: nothing to say
    embedder.check_dimension(None, "the collection")  # unknown: nothing to say
    with pytest.raises(
        ConfigError,
        match=rf"{WHERE}: retrievers.vector_corpus:embed gives 64-dimensional vectors but the "
        "collection holds 384-dimensional ones",
    ):
        embedder.check_dimension(384, "the collection")

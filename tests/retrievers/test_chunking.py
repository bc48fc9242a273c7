"""Chunk ids back to document ids (any adapter), and word-window chunking (the lexical adapter)."""

from __future__ import annotations

import pytest

from retrieval_eval.retrievers.chunking import ChunkMapper
from retrieval_eval.retrievers.corpus import chunk_words


@pytest.mark.parametrize(
    "separator,chunk,doc",
    [
        ("#", "guide.md#3", "guide.md"),
        ("#", "faq#intro.md#0", "faq#intro.md"),  # the LAST separator splits
        ("#", "plain.md", "plain.md"),  # not a chunk id: kept
        ("#", "#3", "#3"),  # nothing before the separator: kept
        ("_", "doc_12_chunk7", "doc_12"),
        ("::", "a/b.txt::0", "a/b.txt"),
    ],
)
def test_separator(separator: str, chunk: str, doc: str) -> None:
    assert ChunkMapper(separator=separator).document_id(chunk) == doc


def test_pattern_with_named_group() -> None:
    mapper = ChunkMapper(pattern=r"^(?P<doc>.+)_chunk\d+$")
    assert mapper.document_id("report.pdf_chunk12") == "report.pdf"
    assert mapper.document_id("report.pdf") == "report.pdf"


def test_pattern_with_unnamed_group() -> None:
    mapper = ChunkMapper(pattern=r"(\d+)-p\d+")
    assert mapper.map(["4521-p1", "4521-p2", "77-p0", "other"]) == ["4521", "4521", "77", "other"]


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({}, "exactly one of"),
        ({"separator": "#", "pattern": "(x)"}, "exactly one of"),
        ({"separator": ""}, "must not be empty"),
        ({"pattern": r"\d+"}, "needs a capturing group"),
    ],
)
def test_bad_mapper_arguments(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ChunkMapper(**kwargs)


def test_chunk_words_windows_overlap() -> None:
    text = " ".join(f"w{i}" for i in range(10))
    assert chunk_words(text, 4, 1) == ["w0 w1 w2 w3", "w3 w4 w5 w6", "w6 w7 w8 w9"]
    assert chunk_words(text, 4, 0) == ["w0 w1 w2 w3", "w4 w5 w6 w7", "w8 w9"]


def test_chunk_words_short_text_is_one_chunk() -> None:
    assert chunk_words("one two", 5, 2) == ["one two"]
    assert chunk_words("", 5, 0) == [""]


def test_chunk_words_covers_every_word() -> None:
    words = [f"w{i}" for i in range(37)]
    chunks = chunk_words(" ".join(words), 8, 3)
    covered = {w for chunk in chunks for w in chunk.split()}
    assert covered == set(words)
    assert all(len(chunk.split()) <= 8 for chunk in chunks)

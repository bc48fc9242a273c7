"""The adapter cache: the lexical index is built once per corpus and options, then loaded."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.retrievers import cache
from retrieval_eval.retrievers.lexical import LexicalRetriever
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.retrievers.registry import RetrieverRegistry

DOCS = [
    {"_id": "d1", "title": "Refund policy", "text": "Annual plans can be refunded within 30 days."},
    {
        "_id": "d2",
        "title": "Passwords",
        "text": "Reset a forgotten password from the sign-in page.",
    },
    {"_id": "d3", "title": "Exports", "text": "Export a workspace as Markdown or PDF files."},
]
QUESTIONS = ["refund an annual plan", "forgot my password", "export to pdf", "zebra"]


@pytest.fixture
def corpus(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in DOCS) + "\n")
    return path


@pytest.fixture
def cache_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv(cache.CACHE_ENV, str(root))
    return root


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts index builds from the corpus (cache misses)."""
    counted: list[int] = []
    real = LexicalRetriever._build

    def counting(self: LexicalRetriever, folder: Path) -> Any:
        counted.append(1)
        return real(self, folder)

    monkeypatch.setattr(LexicalRetriever, "_build", counting)
    return counted


def lexical(corpus: Path, **options: Any) -> LexicalRetriever:
    return LexicalRetriever.from_options("lx", {"corpus": str(corpus), **options}, BuildContext())


def entries(root: Path) -> list[str]:
    folder = root / "lexical"
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


def test_second_build_loads_the_index_and_ranks_the_same(
    corpus: Path, cache_root: Path, builds: list[int]
) -> None:
    first = lexical(corpus)
    assert len(builds) == 1 and len(entries(cache_root)) == 1
    second = lexical(corpus, max_concurrency=4)  # concurrency does not change the index
    assert len(builds) == 1
    assert second.retrieve_many(QUESTIONS, 3) == first.retrieve_many(QUESTIONS, 3)
    assert second.retrieve("zebra", 3) == []  # zero scores still dropped after a load


def test_chunked_index_round_trips(corpus: Path, cache_root: Path, builds: list[int]) -> None:
    first = lexical(corpus, chunk_size=3, chunk_overlap=1)
    second = lexical(corpus, chunk_size=3, chunk_overlap=1)
    assert len(builds) == 1
    assert second.retrieve_many(QUESTIONS, 3) == first.retrieve_many(QUESTIONS, 3)


def test_options_and_corpus_content_make_new_entries(
    corpus: Path, cache_root: Path, builds: list[int]
) -> None:
    lexical(corpus)
    lexical(corpus, k1=1.2)
    assert len(builds) == 2
    corpus.write_text(corpus.read_text() + json.dumps({"_id": "d4", "text": "zebra"}) + "\n")
    assert lexical(corpus).retrieve("zebra", 3) == ["d4"]
    assert len(builds) == 3 and len(entries(cache_root)) == 3


def test_moved_corpus_with_the_same_content_hits(
    corpus: Path, cache_root: Path, builds: list[int], tmp_path: Path
) -> None:
    lexical(corpus)
    moved = tmp_path / "elsewhere" / "corpus.jsonl"
    moved.parent.mkdir()
    moved.write_bytes(corpus.read_bytes())
    lexical(moved)
    assert len(builds) == 1


def test_off_builds_every_time_and_writes_nothing(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, builds: list[int]
) -> None:
    monkeypatch.setenv(cache.CACHE_ENV, "off")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    lexical(corpus)
    lexical(corpus)
    assert len(builds) == 2
    assert not (tmp_path / "home").exists()


def test_default_location_is_under_the_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(cache.CACHE_ENV, raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == tmp_path / "home" / "cache"


def test_unwritable_cache_still_builds(
    corpus: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(cache.CACHE_ENV, str(blocker / "cache"))
    assert lexical(corpus).retrieve("forgot my password", 1) == ["d2"]


def test_concurrent_builders_leave_one_complete_entry(
    corpus: Path, cache_root: Path, builds: list[int]
) -> None:
    barrier = threading.Barrier(4)
    results: list[list[list[str]]] = []

    def build() -> None:
        barrier.wait()
        results.append(lexical(corpus).retrieve_many(QUESTIONS, 3))

    threads = [threading.Thread(target=build) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 and all(r == results[0] for r in results)
    assert len(entries(cache_root)) == 1  # no scratch folder left behind
    assert lexical(corpus).retrieve_many(QUESTIONS, 3) == results[0]


def test_registry_prepare_runs_the_hook_only_where_there_is_one(
    corpus: Path, cache_root: Path, builds: list[int], tmp_path: Path
) -> None:
    run = tmp_path / "run.jsonl"
    run.write_text(json.dumps({"question_id": "q", "ranking": ["d1"]}) + "\n")
    registry = RetrieverRegistry(
        {
            "bm25": {"type": "lexical", "corpus": str(corpus)},
            "precomputed": {"type": "run_file", "path": str(run)},
        }
    )
    assert registry.prepare("bm25") is True
    assert len(builds) == 1 and len(entries(cache_root)) == 1
    registry.build("bm25")
    assert len(builds) == 1  # the mapped tasks load what prepare built
    assert registry.prepare("precomputed") is False
    assert registry.prepare("tests.module:function") is False

"""The lexical (BM25) adapter: corpora, chunking back to documents, zero scores and min_score."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval_eval.config.models import load_config
from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.retrievers.base import EvaluatableRetriever
from retrieval_eval.retrievers.lexical import LexicalRetriever
from retrieval_eval.retrievers.options import BuildContext

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = ROOT / "examples" / "retrieval_eval.yaml"

BEIR_DOCS = [
    {"_id": "d1", "title": "Refund policy", "text": "Annual plans can be refunded within 30 days."},
    {
        "_id": "d2",
        "title": "Passwords",
        "text": "Reset a forgotten password from the sign-in page.",
    },
    {"_id": "d3", "title": "Exports", "text": "Export a workspace as Markdown or PDF files."},
    {"_id": 4, "title": "", "text": "Numeric ids are read as strings. Zebra."},
]


def lexical(tmp: Path, **options: Any) -> LexicalRetriever:
    return LexicalRetriever.from_options("lx", options, BuildContext(base_dir=tmp, source="t.yaml"))


@pytest.fixture
def beir(tmp_path: Path) -> Path:
    path = tmp_path / "corpus.jsonl"
    path.write_text("\n".join(json.dumps(d) for d in BEIR_DOCS) + "\n\n")
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "docs"
    (root / "billing").mkdir(parents=True)
    (root / "billing" / "refunds.md").write_text("# Refunds\nAnnual plans are refundable.")
    (root / "intro.txt").write_text("Welcome to the product. Start here.")
    (root / "image.png").write_bytes(b"\x89PNG refunds refunds refunds")
    long_doc = " ".join(["filler"] * 50 + ["quokka"] + ["filler"] * 50)
    (root / "long.md").write_text(long_doc)
    return root


@pytest.fixture(scope="module")
def demo() -> EvaluatableRetriever:
    """The demo retriever, built once: the config's own options (chunked BM25)."""
    return load_config(DEMO_CONFIG).retriever_registry.build("handbook_bm25")


def test_beir_corpus_indexes_title_and_text(tmp_path: Path, beir: Path) -> None:
    retriever = lexical(tmp_path, corpus="corpus.jsonl")
    assert retriever.size == 4
    assert retriever.retrieve("refund policy", 12)[0] == "d1"
    assert retriever.retrieve("passwords", 12) == ["d2"]  # a word only in the title
    assert retriever.retrieve("zebra", 12) == ["4"]


def test_folder_corpus_ids_are_relative_paths(tmp_path: Path, folder: Path) -> None:
    retriever = lexical(tmp_path, corpus="docs")
    assert retriever.size == 3  # .md and .txt only
    assert retriever.retrieve("refundable annual", 12) == ["billing/refunds.md"]
    assert retriever.retrieve("welcome", 12) == ["intro.txt"]


def test_question_with_no_known_word_comes_back_empty(tmp_path: Path, beir: Path) -> None:
    retriever = lexical(tmp_path, corpus="corpus.jsonl")
    assert retriever.retrieve("quantum chromodynamics", 12) == []
    assert retriever.retrieve("the of and", 12) == []  # stopwords only
    assert retriever.retrieve("", 12) == []


def test_zero_score_documents_are_dropped(tmp_path: Path, beir: Path) -> None:
    # one matching document out of four: the other three score zero and do not pad the list
    assert lexical(tmp_path, corpus="corpus.jsonl").retrieve("markdown", 12) == ["d3"]


def test_min_score_drops_weak_results(tmp_path: Path, beir: Path) -> None:
    loose = lexical(tmp_path, corpus="corpus.jsonl")
    assert loose.retrieve("annual refund password", 12)[:2] in (["d1", "d2"], ["d2", "d1"])
    strict = lexical(tmp_path, corpus="corpus.jsonl", min_score=1000)
    assert strict.retrieve("annual refund password", 12) == []


def test_limit_is_respected(tmp_path: Path, beir: Path) -> None:
    retriever = lexical(tmp_path, corpus="corpus.jsonl", stopwords=None)
    assert len(retriever.retrieve("a the of and plans", 1)) == 1


def test_chunks_map_back_to_documents(tmp_path: Path, folder: Path) -> None:
    retriever = lexical(tmp_path, corpus="docs", chunk_size=20, chunk_overlap=5)
    assert retriever.size > 3
    ranking = retriever.retrieve("quokka", 12)
    assert ranking and set(ranking) == {"long.md"}


def test_chunk_ids_when_asked_for(tmp_path: Path, folder: Path) -> None:
    retriever = lexical(tmp_path, corpus="docs", chunk_size=20, chunk_overlap=5, return_chunks=True)
    ranking = retriever.retrieve("quokka", 12)
    assert ranking and all(r.startswith("long.md#") for r in ranking)
    assert {int(r.rpartition("#")[2]) for r in ranking} <= set(range(retriever.size))


def test_retrieve_many_matches_retrieve(tmp_path: Path, beir: Path) -> None:
    retriever = lexical(tmp_path, corpus="corpus.jsonl")
    questions = ["refund", "nothing matches here", "export pdf"]
    assert retriever.retrieve_many(questions, 5) == [retriever.retrieve(q, 5) for q in questions]
    assert retriever.retrieve_many([], 5) == []


@pytest.mark.parametrize(
    "options,message",
    [
        (
            {"corpus": "docs", "chunk_size": 10, "chunk_overlap": 10},
            "chunk_overlap must be smaller",
        ),
        ({"corpus": "docs", "min_score": -1}, "retrievers.lx.min_score"),
        ({"corpus": "docs", "method": "bm99"}, "retrievers.lx.method"),
        ({"corpus": "docs", "chunksize": 10}, "retrievers.lx.chunksize: unknown option; allowed:"),
        ({}, "retrievers.lx.corpus: Field required"),
    ],
)
def test_bad_options_name_the_file_and_field(
    tmp_path: Path, folder: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as info:
        lexical(tmp_path, **options)
    assert str(info.value).startswith("t.yaml: ")
    assert message in str(info.value)


def test_missing_empty_and_malformed_corpus(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        lexical(tmp_path, corpus="nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="holds no documents"):
        lexical(tmp_path, corpus="empty")
    (tmp_path / "bad.jsonl").write_text('{"_id": "a", "text": "x"}\n{"title": "no id"}\n')
    with pytest.raises(ConfigError, match=r"bad\.jsonl: line 2: expected a JSON object with '_id'"):
        lexical(tmp_path, corpus="bad.jsonl")


def test_a_corpus_that_is_not_text_names_the_file_and_line(tmp_path: Path) -> None:
    # a byte that is not UTF-8 used to escape as a bare UnicodeDecodeError (a traceback in
    # sets lint); an _id that is no text, a crash of every message quoting it
    (tmp_path / "bytes.jsonl").write_bytes(b'{"_id": "a", "text": "x"}\n{"_id": "b\xff"}\n')
    with pytest.raises(ConfigError, match=r"bytes\.jsonl: line 2: not UTF-8 text \(byte 11\)"):
        lexical(tmp_path, corpus="bytes.jsonl")
    (tmp_path / "lone.jsonl").write_text('{"_id": "a"}\n\n{"_id": "b\\ud800", "text": "x"}\n')
    with pytest.raises(
        ConfigError, match=r"lone\.jsonl: line 3: .*'_id' 'b\\ud800' contains a lone"
    ):
        lexical(tmp_path, corpus="lone.jsonl")
    folder = tmp_path / "docs"
    folder.mkdir()
    (folder / "a.md").write_text("fine")
    (folder / "b\udcff.md").write_text("named with a byte that is not UTF-8")
    with pytest.raises(ConfigError, match=r"the file name 'b\\udcff\.md' is not UTF-8 text"):
        lexical(tmp_path, corpus="docs")


def test_demo_retriever_returns_documents_not_chunks(demo: EvaluatableRetriever) -> None:
    ranking = demo.retrieve("How many days do I have to request a refund on an annual plan?", 12)
    assert ranking[0].startswith("billing/refunds")
    assert all("#" not in doc_id for doc_id in ranking)


def test_demo_set_scores_with_uncovered_questions_coming_back_empty(
    demo: EvaluatableRetriever,
) -> None:
    golden = load_config(DEMO_CONFIG).golden_sets.get("handbook.demo")
    result = evaluate(golden, demo)
    assert result.error_count == 0 and result.valid
    assert 0 < result.top1_hits <= result.top3_hits < result.question_count
    by_id = {q.id: q for q in result.questions}
    # a question in words the handbook never uses is correctly answered with nothing
    assert by_id["none-weather"].retrieved == [] and by_id["none-weather"].top1_hit


def test_existing_ids_are_the_indexed_documents(tmp_path: Path, beir: Path, folder: Path) -> None:
    retriever = lexical(tmp_path, corpus="corpus.jsonl")
    assert retriever.existing_ids(["d1", "4", "d9", ""]) == {"d1", "4"}
    chunked = lexical(tmp_path, corpus="docs", chunk_size=20, chunk_overlap=5)
    # chunked internally, but it returns document ids, so it answers for document ids
    asked = ["long.md", "billing/refunds.md", "long.md#0", "image.png"]
    assert chunked.existing_ids(asked) == {"long.md", "billing/refunds.md"}
    chunks = lexical(tmp_path, corpus="docs", chunk_size=20, chunk_overlap=5, return_chunks=True)
    assert chunks.existing_ids(asked) == {"long.md#0"}


def test_a_corpus_with_old_mac_line_breaks_and_unicode_blank_lines_reads(tmp_path: Path) -> None:
    # read as text, as before the check for bytes that are not UTF-8: a lone CR ends a line, and
    # a line of no-break spaces (or U+3000, NEL) is blank (QA: a bytes reader refused both)
    rows = [json.dumps({"_id": f"d{i}", "text": f"word{i} shared"}) for i in range(3)]
    (tmp_path / "cr.jsonl").write_text("\r".join(rows) + "\r", encoding="utf-8", newline="")
    (tmp_path / "blank.jsonl").write_text(
        f"{rows[0]}\n\u00a0\u00a0\n{rows[1]}\n\u3000\n\u0085\n{rows[2]}\n", encoding="utf-8"
    )
    for name in ("cr.jsonl", "blank.jsonl"):
        assert lexical(tmp_path, corpus=name).retrieve("word1", 3)[0] == "d1"


def test_document_texts_come_from_the_corpus(tmp_path: Path, beir: Path, folder: Path) -> None:
    whole = lexical(tmp_path, corpus=str(beir))
    assert whole.document_texts(["d1", "4", "nope"]) == {
        "d1": "Refund policy\nAnnual plans can be refunded within 30 days.",
        "4": "Numeric ids are read as strings. Zebra.",
    }
    chunks = lexical(tmp_path, corpus=str(folder), chunk_size=60, return_chunks=True)
    texts = chunks.document_texts(["long.md#0", "long.md#1", "long.md"])
    assert set(texts) == {"long.md#0", "long.md#1"}  # chunk ids answer with chunk texts
    assert texts["long.md#0"].split() == (["filler"] * 50 + ["quokka"] + ["filler"] * 50)[:60]
    documents = lexical(tmp_path, corpus=str(folder), chunk_size=60)
    assert documents.document_texts(["long.md"])["long.md"].count("filler") == 100


def test_the_adapter_leaves_numba_and_scipy_unloaded(beir: Path, tmp_path: Path) -> None:
    """bm25s would import numba and scipy.sparse (two thirds of a second a process) for backends
    not used here; both stay importable afterwards, and the index answers as before."""
    import os
    import subprocess
    import sys

    pytest.importorskip("numba", reason="numba is not installed: nothing to leave unloaded")
    pytest.importorskip("scipy", reason="scipy is not installed: nothing to leave unloaded")
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from retrieval_eval.retrievers.lexical import LexicalRetriever\n"
        "from retrieval_eval.retrievers.options import BuildContext\n"
        f"r = LexicalRetriever.from_options('lx', {{'corpus': {str(beir)!r}}},\n"
        f"    BuildContext(base_dir=Path({str(tmp_path)!r}), source='t.yaml'))\n"
        "print('numba' in sys.modules, 'scipy' in sys.modules, r.retrieve('refund annual plans', 2))\n"
        "import numba, scipy.sparse\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "RETRIEVAL_EVAL_CACHE": "off"},  # built here, not loaded
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    assert done.stdout.strip() == "False False ['d1']"

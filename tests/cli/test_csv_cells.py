"""Every CSV the project emits goes through one writer (``formats.csv_cells.csv_text``): a text cell a
spreadsheet would run as a formula (``= + - @``, a tab, a carriage return) is written as text,
numbers stay numbers, and a judgments file read back gives every text as it was. Through the
real commands: ``replay --export-draft x.csv`` (CSV by the suffix, an unknown suffix refused
before anything runs) and ``sets pool --output x.csv``."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest
import yaml

from cli.replay_configs import CORPUS, invoke, write_config
from retrieval_eval.formats.csv_cells import FORMULA_STARTS, csv_text
from retrieval_eval.labels.judgments import Judgment, read_judgments, write_judgments

FORMULAS = [
    '=HYPERLINK("http://example.com/x","refund")',
    "-reset my password",
    "@SUM(1+1) invoice",
    "+refund window",
]
PLAIN = ["how do I reset my password", "'=already quoted"]


def _runs_formula(cell: str) -> bool:
    return cell.startswith(FORMULA_STARTS)


def _cells(path: Path) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"), newline="")))


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "queries.jsonl"
    log.write_text("".join(json.dumps({"query": q}) + "\n" for q in FORMULAS + PLAIN))
    data = {
        "store": f"sqlite:///{tmp_path / 'store.sqlite'}",
        "retrievers": {
            "bm25": {"type": "lexical", "corpus": CORPUS, "chunk_size": 120, "chunk_overlap": 20},
            "bm25_flat": {"type": "lexical", "corpus": CORPUS, "k1": 0.3, "b": 0.1},
        },
        "samples": {"evil": {"source": {"path": str(log)}}},
    }
    return write_config(tmp_path, monkeypatch, data)


def test_a_csv_draft_writes_formulas_as_text_and_reads_back_as_they_were(
    config: Path, tmp_path: Path
) -> None:
    draft = tmp_path / "draft.csv"
    args = ("replay", "evil", "bm25", "--against", "bm25_flat", "--export-draft", str(draft))
    done = invoke(config, *args)
    assert done.exit_code == 0, done.output
    cells = _cells(draft)
    assert cells and not any(_runs_formula(v) for row in cells for v in row.values())
    asked = {row["question"] for row in cells}
    assert asked == {"'" + q for q in FORMULAS} | {PLAIN[0], "''=already quoted"}
    rows = read_judgments(draft)  # what `sets judge import` reads
    assert {row.question for row in rows} == set(FORMULAS + PLAIN)
    assert all(
        row.grade is None and row.source and row.source.startswith("replay ") for row in rows
    )
    jsonl = tmp_path / "draft.jsonl"
    assert invoke(config, *args[:-1], str(jsonl)).exit_code == 0
    assert {json.loads(line)["question"] for line in jsonl.read_text().splitlines()} == set(
        FORMULAS + PLAIN
    )


def test_a_draft_with_another_suffix_is_refused_before_anything_runs(
    config: Path, tmp_path: Path
) -> None:
    draft = tmp_path / "draft.txt"
    done = invoke(config, "replay", "evil", "bm25", "--export-draft", str(draft))
    assert done.exit_code == 2, done.output
    assert done.stderr == (
        f"error: --export-draft {draft}: a judgments file ends in .jsonl or .csv, not '.txt': "
        "name it e.g. draft.csv\n"
    )
    assert not draft.exists()
    assert not (tmp_path / "store.sqlite").exists()  # the replay never ran: nothing was stored


def test_sets_pool_into_csv_writes_the_questions_formulas_as_text(
    config: Path, tmp_path: Path
) -> None:
    set_file = tmp_path / "evil.yaml"
    questions = [
        {"id": f"q{i}", "question": q, "form": "match", "expected_document_ids": ["none.md"]}
        for i, q in enumerate(FORMULAS)
    ]
    set_file.write_text(yaml.safe_dump({"identifier": "evil", "questions": questions}))
    pool = tmp_path / "pool.csv"
    args = ["sets", "pool", str(set_file), "--retrievers", "bm25", "--fresh", "--no-lint"]
    done = invoke(config, *args, "--output", str(pool))
    assert done.exit_code == 0, done.output
    cells = _cells(pool)
    assert cells and not any(_runs_formula(v) for row in cells for v in row.values())
    assert {row["question"] for row in cells} == {"'" + q for q in FORMULAS}
    rows = read_judgments(pool)
    assert {(row.question_id, row.question) for row in rows} == {
        (f"q{i}", q) for i, q in enumerate(FORMULAS)
    }
    assert all(row.text for row in rows)  # the documents' texts, for the rater


def test_judgments_round_trip_every_text_field_and_a_spreadsheets_own_save(
    tmp_path: Path,
) -> None:
    row = Judgment(
        question="=1+2",
        document_id="-doc",
        grade=2,
        rater="@ann",
        note="+1 agreed",
        source="'=quoted already",
        text="\tindented",
    )
    path = tmp_path / "judged.csv"
    write_judgments([row], path)
    raw = _cells(path)[0]
    assert not any(_runs_formula(v) for v in raw.values())
    assert raw["grade"] == "2" and raw["source"] == "''=quoted already"
    assert read_judgments(path) == [row]
    # a spreadsheet that saves the formulas it showed as text without their quote
    shown = [v if k == "source" else v.removeprefix("'") for k, v in raw.items()]
    saved = io.StringIO()
    csv.writer(saved).writerows([list(raw), shown])
    path.write_text(saved.getvalue())
    assert read_judgments(path) == [row]


def test_numbers_stay_numbers_and_only_text_is_escaped() -> None:
    text = csv_text(["name", "delta", "count"], [["-x", -0.5, -3], ["=y", None, 0]])
    assert list(csv.reader(io.StringIO(text))) == [
        ["name", "delta", "count"],
        ["'-x", "-0.5", "-3"],
        ["'=y", "", "0"],
    ]

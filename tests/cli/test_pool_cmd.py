"""``sets pool``: stored or fresh runs pooled, judged pairs left out, texts, holes, SciFact's figures."""

from __future__ import annotations

import csv
import json
import re
from collections import defaultdict
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from helpers import shared_collection

from retrieval_eval.cli import cli
from retrieval_eval.golden.importers import import_beir
from retrieval_eval.labels.judgments import read_judgments, write_judgments

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
HOLES = re.compile(r"^  (\S+): (.+): top-1 .*, holes@(\d+) ([\d.]+)% \((\d+) of (\d+) unjudged\)$")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def holes(result: Result) -> dict[str, tuple[int, int, int]]:
    """retriever -> (depth, unjudged, slots), as the summary on stderr states them."""
    found = {}
    for line in result.stderr.splitlines():
        match = HOLES.match(line)
        if match:
            name, _, depth, _, unjudged, slots = match.groups()
            found[name] = (int(depth), int(unjudged), int(slots))
    return found


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    """The demo config and an empty SQLite store's URL."""
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    return EXAMPLES / "retrieval_eval.yaml", f"sqlite:///{tmp_path / 's.db'}"


def test_a_retriever_without_a_stored_run_suggests_fresh_and_fresh_pools_it(
    demo: tuple[Path, str], tmp_path: Path
) -> None:
    config, db = demo
    base = [
        "sets",
        "pool",
        "handbook.demo",
        "--retrievers",
        "handbook_bm25",
        "--config",
        str(config),
    ]
    missing = invoke(*base, "--db", db)
    assert missing.exit_code == 2 and "--fresh" in missing.stderr
    out = tmp_path / "pool.csv"
    fresh = invoke(*base, "--fresh", "--depth", "5", "--output", str(out))
    assert fresh.exit_code == 0, fresh.output
    rows = read_judgments(out)  # the judgments format reads its own pool back
    golden = yaml.safe_load((EXAMPLES / "golden" / "handbook.yaml").read_text())
    labels = {q["id"]: set(q["expected_document_ids"]) for q in golden["questions"]}
    assert rows and all(
        r.grade is None and r.document_id not in labels[r.question_id] for r in rows
    )
    ranked = [r for r in rows if "handbook_bm25 #" in (r.source or "")]
    assert all(1 <= int(r.source.split("#")[1].split(",")[0]) <= 5 for r in ranked)  # type: ignore[union-attr]
    # lint's two completeness candidates (the iOS and Android pages, 82 % alike) are among them
    lint = [r for r in rows if "label_completeness: 82% like" in (r.source or "")]
    assert sorted((r.question_id, r.document_id) for r in lint) == [
        ("android-offline-storage", "mobile/offline-mode-ios.md"),
        ("iphone-offline-space", "mobile/offline-mode-android.md"),
    ]
    assert all(r.text and len(r.text) <= 500 for r in rows)  # every document's text, cut
    (depth, unjudged, slots) = holes(fresh)["handbook_bm25"]
    assert (depth, unjudged) == (5, len(ranked))  # every unjudged top-5 place is a candidate row
    assert slots <= 5 * len(labels)

    # graded pairs of a judgments file are left out, neither candidates nor holes
    graded = [r.model_copy(update={"grade": 0, "rater": "ann"}) for r in ranked[:3]]
    done = tmp_path / "done.jsonl"
    write_judgments(graded, done)
    again = invoke(*base, "--fresh", "--depth", "5", "--judgments", str(done), "--no-texts")
    pairs = {
        (r["question_id"], r["document_id"]) for r in map(json.loads, again.stdout.splitlines())
    }
    assert not pairs & {(r.question_id, r.document_id) for r in graded}
    assert len(pairs) == len(rows) - 3
    assert holes(again)["handbook_bm25"] == (5, unjudged - 3, slots)


def test_a_stored_run_kept_to_top_3_is_pooled_at_3_and_says_so(demo: tuple[Path, str]) -> None:
    config, db = demo
    stored = invoke("run", "handbook.demo", "handbook_bm25", "--config", str(config), "--db", db)
    assert stored.exit_code == 0, stored.output
    result = invoke(
        "sets", "pool", "handbook.demo", "--retrievers", "handbook_bm25", "--config", str(config),
        "--db", db, "--no-lint", "--no-texts",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert holes(result)["handbook_bm25"][0] == 3
    assert "kept its rankings to top 3 only" in result.stderr
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert {row["source"].split(" #")[0] for row in rows} == {"handbook_bm25"}
    assert all(int(row["source"].split("#")[1]) <= 3 for row in rows)


def test_scifact_test_questions_pooled_over_the_bm25_and_dense_reference_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scifact = shared_collection("scifact")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    golden = import_beir(scifact, "test", identifier="scifact.test")
    set_file = tmp_path / "scifact.json"
    set_file.write_text(golden.model_dump_json())
    runs = {"bm25s": "bm25s.run", "dense_minilm": "dense_minilm.run"}
    retrievers = {
        name: {"type": "run_file", "path": str(scifact / "runs" / file), "corpus": str(scifact)}
        for name, file in runs.items()
    }
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({"retrievers": retrievers, "run": {"cutoffs": [1, 3, 10]}}))
    db = f"sqlite:///{tmp_path / 's.db'}"
    for name in runs:
        stored = invoke("run", str(set_file), name, "--config", str(config), "--db", db)
        assert stored.exit_code in (0, 1), stored.output  # 1 would be a regression: none here
    out = tmp_path / "pool.jsonl"
    result = invoke(
        "sets", "pool", str(set_file), "--retrievers", ",".join(runs), "--config", str(config),
        "--db", db, "--output", str(out), "--no-lint",
    )  # fmt: skip
    assert result.exit_code == 0, result.output

    # independently: the qrels and the run files, read here (trec_eval's order: score, then id)
    labels: dict[str, set[str]] = defaultdict(set)
    with (scifact / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                labels[row["query-id"]].add(row["corpus-id"])
    expected: dict[str, tuple[int, int, int]] = {}
    pairs: set[tuple[str, str]] = set()
    for name, file in runs.items():
        lines: dict[str, list[tuple[float, str]]] = defaultdict(list)
        for line in (scifact / "runs" / file).read_text().splitlines():
            qid, _, doc, _, score, _ = line.split()
            lines[qid].append((float(score), doc))
        slots = unjudged = 0
        for qid, targets in labels.items():
            top = [doc for _, doc in sorted(lines[qid], reverse=True)[:10]]
            slots += len(top)
            unjudged += sum(doc not in targets for doc in top)
            pairs.update((qid, doc) for doc in top if doc not in targets)
        expected[name] = (10, unjudged, slots)
    assert holes(result) == expected
    rows = read_judgments(out)
    assert {(r.question_id, r.document_id) for r in rows} == pairs
    assert all(r.text for r in rows)  # the run_file corpus gives every candidate its text
    # docs/how-to/labels.md states these figures
    assert expected == {"bm25s": (10, 2728, 3000), "dense_minilm": (10, 2735, 3000)}
    assert len(pairs) == 4691

"""The import/export commands: sets import-beir / import-trec / export-qrels, and export-run."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from helpers import shared_collection

from retrieval_eval.cli import cli
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import load_golden_set
from retrieval_eval.retrievers.run_file import RunFileRetriever


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


def test_import_beir_writes_the_set_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    scifact = shared_collection("scifact")
    monkeypatch.chdir(tmp_path)
    result = invoke(
        "sets", "import-beir", str(scifact), "--split", "test", "--identifier", "scifact"
    )
    assert result.exit_code == 0, result.output
    assert "wrote scifact.yaml: set 'scifact', 300 questions, 339 targets" in result.output
    golden = load_golden_set(tmp_path / "scifact.yaml")
    assert len(golden.questions) == 300
    # a second import does not silently overwrite the file
    again = invoke("sets", "import-beir", str(scifact), "--identifier", "scifact")
    assert again.exit_code == 2 and "already exists; pass --force" in again.stderr
    assert "Traceback" not in again.output
    forced = invoke("sets", "import-beir", str(scifact), "--identifier", "scifact", "--force")
    assert forced.exit_code == 0


def test_import_beir_options_and_errors(tmp_path: Path) -> None:
    cranfield = shared_collection("cranfield")
    forms = tmp_path / "forms.csv"
    forms.write_text("id,form\n1,gap\n")
    out = tmp_path / "sets" / "cran.json"
    result = invoke(
        "sets", "import-beir", str(cranfield), "--split", "test_all_codes", "--identifier",
        "cran", "--output", str(out), "--forms", str(forms), "--min-relevance", "1",
        "--hard-class-from", "cran_qry_I",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "225 questions, 1612 targets" in result.output
    golden = load_golden_set(out)
    assert golden.questions[0].form.value == "gap" and golden.questions[0].hard_class == "001"
    bad = invoke("sets", "import-beir", str(cranfield), "--split", "dev", "-o", str(out))
    assert bad.exit_code == 2
    assert "qrels/dev.tsv: no such file" in bad.stderr and "test_all_codes" in bad.stderr
    bad_id = invoke("sets", "import-beir", str(cranfield), "--identifier", "Not Valid", "--force",
                    "-o", str(out))  # fmt: skip
    assert bad_id.exit_code == 2 and "is not a valid identifier" in bad_id.stderr


def test_export_qrels_and_import_trec_round_trip(tmp_path: Path) -> None:
    scifact = shared_collection("scifact")
    set_file = tmp_path / "scifact.yaml"
    invoke("sets", "import-beir", str(scifact), "--identifier", "scifact", "-o", str(set_file))
    qrels, topics = tmp_path / "out" / "scifact.qrels", tmp_path / "out" / "topics.tsv"
    exported = invoke(
        "sets", "export-qrels", str(set_file), "-o", str(qrels), "--topics", str(topics)
    )
    assert exported.exit_code == 0, exported.output
    assert "339 qrels lines" in exported.output
    stdout = invoke("sets", "export-qrels", str(set_file))
    assert stdout.stdout.splitlines()[0] == "1 0 31715818 1"
    assert len(stdout.stdout.splitlines()) == 339
    back = tmp_path / "back.yaml"
    imported = invoke(
        "sets", "import-trec", "--topics", str(topics), "--qrels", str(qrels),
        "--identifier", "scifact", "-o", str(back),
    )  # fmt: skip
    assert imported.exit_code == 0, imported.output
    assert load_golden_set(back).fingerprint == load_golden_set(set_file).fingerprint


def test_export_run_from_the_store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from retrieval_eval.golden.importers import import_beir
    from retrieval_eval.store import open_store

    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    scifact = shared_collection("scifact")
    golden = import_beir(scifact, identifier="scifact")
    result = evaluate(golden, RunFileRetriever.from_file(scifact / "runs" / "bm25s.run", "bm25s"))
    url = f"sqlite:///{tmp_path / 'results.sqlite'}"
    with open_store(url) as store:
        run_id = store.runs.save(result)
    out = tmp_path / "bm25s.top3.run"
    exported = invoke("runs", "export", str(run_id), "--db", url, "-o", str(out))
    assert exported.exit_code == 0, exported.output
    assert "900 run lines" in exported.output  # 300 questions x 3 distinct documents
    lines = out.read_text().splitlines()
    assert lines[0].split() == ["1", "Q0", "18953920", "1", "3", "bm25s"]
    rescored = evaluate(golden, RunFileRetriever.from_file(out))
    assert (rescored.top1_hits, rescored.top3_hits) == (result.top1_hits, result.top3_hits)
    missing = invoke("runs", "export", "999", "--db", url)
    assert missing.exit_code == 2 and "no stored run with id 999" in missing.stderr

"""``retrieval-eval run`` checks dead labels before judging: a stale question is not a regression."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli

SET = """identifier: cli.dead
questions:
  - {id: q1, question: first, form: match, expected_document_ids: [a]}
  - {id: q2, question: second, form: match, expected_document_ids: [b]}
  - {id: q3, question: third, form: match, expected_document_ids: [c, gone-too]}
"""

# an index whose documents are listed in index.txt: a document removed from it is neither
# returned nor known, as after a rebuild that dropped it
RETRIEVERS = """
from pathlib import Path

class Index:
    identifier = "index"
    existing_ids_source = "index.txt"

    def _docs(self):
        return Path("index.txt").read_text().split()

    def retrieve(self, question, limit):
        wanted = {"first": "a", "second": "b", "third": "c"}[question]
        return [wanted] if wanted in self._docs() else ["other"]

    def existing_ids(self, ids):
        return set(ids) & set(self._docs())

class Broken(Index):
    def existing_ids(self, ids):
        raise RuntimeError("lookup down")
"""


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "dead.yaml").write_text(SET)
    (tmp_path / "dead_label_index.py").write_text(RETRIEVERS)
    (tmp_path / "index.txt").write_text("a b c other")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "dead_label_index", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", f"sqlite:///{tmp_path / 'results.sqlite'}")
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    return tmp_path


def run_json(retriever: str = "dead_label_index:Index") -> dict:
    result = CliRunner().invoke(cli, ["run", "dead.yaml", retriever, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_document_dropped_from_the_index_makes_a_stale_label_not_a_regression(
    work: Path,
) -> None:
    first = run_json()
    assert first["regression"]["state"] == "baseline"
    assert first["dead_labels"]["dead_ids"] == ["gone-too"]  # partly dead: c survives
    assert first["dead_labels"]["partly_dead"] == {"q3": ["gone-too"]}
    (work / "index.txt").write_text("a c other")  # the rebuild lost b
    second = run_json()
    verdict = second["regression"]
    assert verdict["state"] == "no_regression"  # top-1 would be 100% -> 66.7% without the check
    assert verdict["stale_questions"] == ["q2"]
    assert verdict["dead_ids"] == ["b", "gone-too"]
    q2 = next(q for q in second["questions"] if q["id"] == "q2")
    assert (q2["top1_hit"], q2["stale_label"], q2["dead_ids"]) == (False, True, ["b"])
    result = CliRunner().invoke(cli, ["run", "dead.yaml", "dead_label_index:Index"])
    assert "stale label: b no longer in the index" in result.stdout
    assert "Labels need attention: 2 ids no longer in the index" in result.stdout


def test_a_failing_lookup_is_recorded_and_the_run_goes_on(work: Path) -> None:
    data = run_json("dead_label_index:Broken")
    assert data["dead_labels"]["checked"] is False
    assert "lookup down" in data["dead_labels"]["source"]
    assert data["regression"]["dead_ids"] == []


def test_csv_from_run_and_show_marks_the_stale_label(work: Path) -> None:
    import csv
    import io

    run_json()
    (work / "index.txt").write_text("a c other")  # the rebuild lost b
    ran = CliRunner().invoke(cli, ["run", "dead.yaml", "dead_label_index:Index", "--format", "csv"])
    assert ran.exit_code == 0, ran.output
    rows = list(csv.DictReader(io.StringIO(ran.stdout, newline="")))
    marks = {row["id"]: (row["stale_label"], row["dead_ids"]) for row in rows}
    # q3 is partly dead (c survives): judged as usual, not stale
    assert marks == {"q1": ("0", "[]"), "q2": ("1", '["b"]'), "q3": ("0", "[]")}
    shown = CliRunner().invoke(cli, ["runs", "show", "2", "--format", "csv"])
    assert shown.exit_code == 0, shown.output
    assert shown.stdout == ran.stdout  # the stored run reads back with its check

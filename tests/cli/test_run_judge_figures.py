"""``run``'s report carries the figures beside a model judge's labels only when the store holds
machine judgments (``rater = judge:<name>``) of the set: JSON ``judge_figures``, text lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result

from retrieval_eval import load_golden_set
from retrieval_eval.cli import cli
from retrieval_eval.labels.judgments import Judgment
from retrieval_eval.store import open_store

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SET = "handbook.demo"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


@pytest.fixture
def demo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, str]:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    shutil.copy(EXAMPLES / "golden" / "handbook.yaml", tmp_path / "handbook.yaml")
    config = tmp_path / "retrieval_eval.yaml"
    config.write_text(yaml.safe_dump({
        "sets": ["handbook.yaml"],
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
    }))  # fmt: skip
    return config, f"sqlite:///{tmp_path / 'results.sqlite'}"


def run_json(config: Path, db: str) -> dict[str, object]:
    result = invoke("run", SET, "bm25", "--config", str(config), "--db", db, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_judge_figures_only_with_machine_judgments(demo: tuple[Path, str]) -> None:
    config, db = demo
    first = run_json(config, db)
    assert "judge_figures" not in first  # no judgments at all: the report is as before
    questions = first["questions"]
    assert isinstance(questions, list)
    golden = load_golden_set(config.parent / "handbook.yaml")
    targets = {g.id: set(g.targets()) for g in golden.questions}
    # people grade one unlabelled top-3 document; the report still has no judge figures
    q = next(q for q in questions if len(q["retrieved"]) >= 3)
    doc = next(d for d in q["retrieved"][:3] if d not in targets[q["id"]])
    with open_store(db) as store:
        store.judgments.add(SET, [Judgment(question_id=q["id"], document_id=doc, grade=0,
                                            rater="ann")], channel="import", written_by="t")  # fmt: skip
    assert "judge_figures" not in run_json(config, db)
    plain = invoke("compare", "--runs", f"{first['run_id']},{first['run_id'] + 1}", "--db", db,
                   "--format", "json")  # fmt: skip
    assert plain.exit_code == 0, plain.output
    assert "judge_figures" not in json.loads(plain.stdout)["entries"][0]
    # a model judges every other top-3 place, calling each relevant
    machine = [
        Judgment(question_id=other["id"], document_id=d, grade=2, rater="judge:sim")
        for other in questions
        for d in other["retrieved"][:3]
        if d not in targets[other["id"]] and (other["id"], d) != (q["id"], doc)
    ]
    with open_store(db) as store:
        store.judgments.add(SET, machine, channel="import", written_by="t")
    document = run_json(config, db)
    figures = document["judge_figures"]
    assert isinstance(figures, dict)
    assert figures["machine_raters"] == ["judge:sim"]
    holes = figures["holes"]
    assert holes["depth"] == 3  # the run kept its top 3: holes counted there, as run_holes does
    assert holes["machine_judged"] == len(machine)
    assert holes["human_judged"] + holes["machine_judged"] + holes["unjudged"] == holes["slots"]
    top3 = figures["hit_rates"]["top3"]
    # the model calls everything relevant: people + model say every question with 3 results hits
    assert top3["human_machine"]["rate"] >= document["top3_hit_rate"]
    assert top3["human_machine"]["questions"] == len(questions)

    text = invoke("run", SET, "bm25", "--config", str(config), "--db", db)
    assert text.exit_code == 0, text.output
    assert "Model judgments (judge:sim)" in text.stdout
    assert "top-3 hit rate (95% intervals): people only" in text.stdout
    # the stored run shows the same figures (against the judgments stored now)
    shown = invoke("runs", "show", str(document["run_id"]), "--db", db, "--format", "json")
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["judge_figures"] == figures
    # compare's entry carries them too (JSON), and no entry has them without model judgments
    board = invoke("compare", "--runs", f"{first['run_id']},{document['run_id']}", "--db", db,
                   "--format", "json")  # fmt: skip
    assert board.exit_code == 0, board.output
    entry = json.loads(board.stdout)["entries"][0]
    assert entry["judge_figures"]["holes"]["machine_judged"] == len(machine)

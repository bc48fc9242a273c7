"""A ``type: python`` judge over a pool gathered with ``--retrievers`` (a run file whose corpus
gives the texts): its grades stored as ``judge:NAME``; a second run asks the function nothing;
config mistakes named with the fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli.test_cli_core import invoke, isolate_env
from retrieval_eval.store import open_store

SET = "py.set"
GRADER = """
CALLS = []


def make_grader(cut):
    def grade(question, text):
        CALLS.append(text)
        return 2 if cut in text else 0
    return grade
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    isolate_env(monkeypatch, tmp_path)
    monkeypatch.chdir(tmp_path)
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    questions = []
    lines = []
    for q in range(5):
        for d in range(4):
            words = "apples" if d % 2 else "pears"
            (corpus / f"d{q}{d}.md").write_text(f"Doc {q}{d} about {words}.\n", encoding="utf-8")
        questions.append(
            {"id": f"q{q}", "question": f"Which fruit {q}?", "form": "match",
             "expected_document_ids": [f"d{q}0.md"]}
        )  # fmt: skip
        lines.append(
            json.dumps({"question_id": f"q{q}", "ranking": [f"d{q}{d}.md" for d in range(4)]})
        )
    (tmp_path / "run.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (tmp_path / "set.yaml").write_text(yaml.safe_dump({"identifier": SET, "questions": questions}))
    (tmp_path / "my_judges.py").write_text(GRADER, encoding="utf-8")
    config = {
        "sets": ["set.yaml"],
        "retrievers": {"runs": {"type": "run_file", "path": "run.jsonl", "corpus": "corpus"}},
        "run": {"cutoffs": [1, 3, 10]},
        "judges": {
            "fruit": {
                "type": "python",
                "factory": "my_judges:make_grader",
                "options": {"cut": "apples"},
                "paths": ["."],
            }
        },
    }
    (tmp_path / "retrieval_eval.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return tmp_path


def test_a_python_judge_grades_a_pool_gathered_from_retrievers(home: Path) -> None:
    cfg = str(home / "retrieval_eval.yaml")
    assert invoke("run", SET, "runs", "--config", cfg).exit_code in (0, 1)
    result = invoke(
        "sets", "judge", "auto", SET, "--judge", "fruit", "--retrievers", "runs", "--config", cfg
    )
    assert result.exit_code == 0, result.output
    assert (
        "15 pair(s): 0 from the cache, 15 asked" in result.output
    )  # 4 per question, less the target
    with open_store(f"sqlite:///{home / 'results.sqlite'}") as store:
        rows = store.judgments.read(SET, gated=False)
    grades = {(r.question_id, r.document_id): r.grade for r in rows}
    assert grades == {
        (f"q{q}", f"d{q}{d}.md"): (2 if d % 2 else 0) for q in range(5) for d in (1, 2, 3)
    }
    assert {r.rater for r in rows} == {"judge:fruit"}

    import my_judges  # type: ignore[import-not-found]  # the factory's module, as the CLI loaded it

    calls = len(my_judges.CALLS)
    again = invoke(
        "sets", "judge", "auto", SET, "--judge", "fruit", "--retrievers", "runs", "--config", cfg
    )
    assert again.exit_code == 0, again.output
    assert "15 from the cache, 0 asked" in again.output
    assert len(my_judges.CALLS) == calls


def test_judge_config_mistakes_are_named(home: Path) -> None:
    cfg = home / "retrieval_eval.yaml"
    (home / "x.jsonl").write_text("")
    unknown = invoke(
        "sets", "judge", "auto", SET, "--judge", "fruits", "--pool", "x.jsonl", "--config", str(cfg)
    )
    assert unknown.exit_code == 2 and "unknown judge 'fruits'" in unknown.output
    assert "did you mean" in unknown.output.lower() or "fruit" in unknown.output
    neither = invoke("sets", "judge", "auto", SET, "--judge", "fruit", "--config", str(cfg))
    assert neither.exit_code == 2 and "--pool FILE" in neither.output
    config = yaml.safe_load(cfg.read_text())
    config["judges"]["gpt"] = {"type": "openai", "model": "m", "base_url": "http://h/v1?key=s3cret"}
    cfg.write_text(yaml.safe_dump(config))
    bad = invoke(
        "sets", "judge", "auto", SET, "--judge", "gpt", "--pool", "x.jsonl", "--config", str(cfg)
    )
    assert bad.exit_code == 2 and "judges.gpt.openai.base_url" in bad.output
    assert "s3cret" not in bad.output

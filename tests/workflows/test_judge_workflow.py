"""The judge workflow on base.py's shape, as Airflow would map it: registered as "judge", planned
into batches that share --max-pairs, each batch executed apart (nothing stored), reduced in plan
order and recorded once; a second pass is all cache."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from retrieval_eval.store import open_store
from retrieval_eval.workflows.base import WORKFLOWS
from retrieval_eval.workflows.judge import JudgeJob, JudgeWorkflow, PairToJudge

GRADER = """
def make(step):
    return lambda question, text: int(text.split()[-1]) % step
"""


@pytest.fixture
def job(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> JudgeJob:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    (tmp_path / "wf_grader.py").write_text(GRADER)
    config = {
        "judges": {
            "mod": {"type": "python", "factory": "wf_grader:make", "options": {"step": 4}, "paths": ["."]}
        }
    }  # fmt: skip
    (tmp_path / "retrieval_eval.yaml").write_text(yaml.safe_dump(config))
    pairs = [
        PairToJudge(question_id=f"q{i}", question=f"question {i}", document_id=f"d{i}", text=f"text {i}")
        for i in range(10)
    ]  # fmt: skip
    return JudgeJob(
        config_path=str(tmp_path / "retrieval_eval.yaml"),
        db=f"sqlite:///{tmp_path / 'r.db'}",
        set_identifier="s",
        judge="mod",
        pairs=pairs,
    )


def test_mapped_batches_record_once_and_a_second_pass_is_all_cache(job: JudgeJob) -> None:
    assert WORKFLOWS["judge"] is JudgeWorkflow
    workflow = JudgeWorkflow(JudgeJob.model_validate_json(job.model_dump_json()))  # as an XCom
    batches = workflow.plan(max_batches=3)
    assert [len(b.pairs) for b in batches] == [4, 4, 2]
    assert [b.start for b in batches] == [0, 4, 8]
    parts = [JudgeWorkflow(job).execute(b) for b in batches]  # each in a task of its own
    outcome = workflow.record(workflow.reduce(parts))
    assert (outcome.graded, outcome.asked, outcome.from_cache, outcome.stored) == (10, 10, 0, 10)
    with open_store(job.db or "") as store:
        rows = store.judgments.read("s", gated=False)
    assert {(r.question_id, r.grade) for r in rows} == {(f"q{i}", i % 4) for i in range(10)}

    again = JudgeWorkflow(job)
    second = again.record(again.reduce([again.execute(b) for b in again.plan(max_batches=2)]))
    assert (second.asked, second.from_cache, second.stored) == (0, 10, 0)


def test_max_pairs_is_shared_among_the_batches(job: JudgeJob) -> None:
    limited = job.model_copy(update={"max_pairs": 5})
    batches = JudgeWorkflow(limited).plan(max_batches=3)
    assert [b.max_pairs for b in batches] == [2, 2, 1]
    workflow = JudgeWorkflow(limited)
    outcome = workflow.record(workflow.reduce([workflow.execute(b) for b in batches]))
    assert outcome.asked == 5 and outcome.not_asked == 5
    assert outcome.stopped is not None and "--max-pairs" in outcome.stopped

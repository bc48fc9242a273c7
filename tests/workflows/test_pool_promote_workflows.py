"""The pool and promote workflows on their own: mapped batches pool what one batch pools, and a
promotion blocked by lint is an outcome the DAG task fails with, its set file untouched."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from retrieval_eval.workflows.base import WORKFLOWS, run_in_process
from retrieval_eval.workflows.pool import PoolJob, PoolWorkflow
from retrieval_eval.workflows.promote import PromoteJob, PromoteWorkflow

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RETRIEVAL_EVAL_DB", f"sqlite:///{tmp_path / 's.db'}")
    return tmp_path


def test_pool_and_promote_are_registered() -> None:
    assert WORKFLOWS["pool"] is PoolWorkflow and WORKFLOWS["promote"] is PromoteWorkflow


def test_mapped_fresh_batches_pool_what_one_batch_pools(home: Path) -> None:
    job = PoolJob(
        config_path=str(EXAMPLES / "retrieval_eval.yaml"),
        set="handbook.demo",
        retrievers=["handbook_bm25"],
        depth=5,
        fresh=True,
        max_batches=4,
    )
    one = run_in_process(PoolWorkflow(job))
    flow = PoolWorkflow(job)
    batches = flow.plan(max_batches=4)
    assert len(batches) == 4  # the questions split four ways
    assert [b.start for b in batches] == sorted(b.start for b in batches)
    mapped = flow.record(flow.reduce([flow.execute(b) for b in batches]))
    assert one.rows and mapped.rows == one.rows
    assert mapped.pooled == one.pooled and one.pooled[0].origin == "a fresh run, not saved"
    assert one.pooled[0].holes_depth == 5 and one.written is None


def test_a_blocked_promotion_is_not_written_and_fails_a_task(home: Path) -> None:
    folder = home / "cfg"
    shutil.copytree(EXAMPLES, folder, ignore=shutil.ignore_patterns("beir*"))
    set_file = folder / "golden" / "handbook.yaml"
    before = set_file.read_bytes()
    rows = home / "rows.jsonl"
    # every target of one question judged not relevant: it would become a no-result question
    golden = yaml.safe_load(before)
    first = golden["questions"][0]
    question = first["id"]
    rows.write_text(
        "".join(
            f'{{"question_id": "{question}", "document_id": "{doc}", "grade": 0, "rater": "ann"}}\n'
            for doc in first["expected_document_ids"]
        )
    )
    job = PromoteJob(
        config_path=str(folder / "retrieval_eval.yaml"),
        set="handbook.demo",
        judgments_file=str(rows),
    )
    flow = PromoteWorkflow(job)
    outcome = run_in_process(flow)
    assert outcome.blocked and not outcome.written and outcome.problems
    assert set_file.read_bytes() == before
    failure = flow.failure(outcome)
    assert failure is not None and "not written" in str(failure)

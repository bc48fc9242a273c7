"""``approve_baseline``: the labelled run and the tasks behind the approval request, on a real
SQLite store.

A run under changed labels is saved refused as a baseline until approved; the branch asks for an
approval only for it and for a regression; the request names the run, its figures, the current
baseline and the run page, and no question text; approving accepts the run as ``baseline
accept`` does. The request itself in a running Airflow: tests/airflow/test_deployment.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import yaml
from dag_helpers import EXAMPLES

from retrieval_eval.airflow.approval import (
    accept_run,
    approval_request,
    approval_run_id,
    stored_for_approval,
)
from retrieval_eval.airflow.branching import (
    BRANCH_APPROVE,
    BRANCH_BASELINE,
    BRANCH_OK,
    BRANCH_REGRESSION,
    choose_branches,
)
from retrieval_eval.airflow.lines import verdict_line
from retrieval_eval.store import open_store
from retrieval_eval.workflows.base import run_in_process
from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

UI = "http://airflow.example/retrieval-eval"


def _config(folder: Path, golden: Path, **lexical: Any) -> str:
    path = folder / "c.yaml"
    path.write_text(
        yaml.safe_dump(
            {
                "sets": [str(golden)],
                "retrievers": {
                    "bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus"), **lexical}
                },
                "evaluations": [
                    {"set": "handbook.demo", "retriever": "bm25", "approve_baseline": True}
                ],
            }
        )
    )
    return str(path)


def _record(config: str, key: str, url: str, approve: bool = False) -> dict[str, Any]:
    """One labelled run recorded; its record as the persist task's XCom carries it."""
    job = LabelledRunJob(
        config_path=config,
        set="handbook.demo",
        retriever="bm25",
        run_key=key,
        approve_baseline=approve,
    )
    return run_in_process(LabelledRun(job, store_url=lambda: url)).model_dump(mode="json")


def _relabelled(source: Path, target: Path) -> Path:
    data = yaml.safe_load(source.read_text())
    data["questions"][0]["expected_document_ids"].append("billing/invoices.md")
    target.write_text(yaml.safe_dump(data))
    return target


def test_changed_labels_wait_for_approval_and_approving_accepts_the_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    golden = tmp_path / "handbook.yaml"
    golden.write_text((EXAMPLES / "golden" / "handbook.yaml").read_text())
    config = _config(tmp_path, golden)
    first = _record(config, "k1", url, approve=True)
    first_result = first["result"]
    assert choose_branches(first, approve_baseline=True) == [BRANCH_BASELINE]

    _relabelled(golden, golden)
    recorded = _record(config, "k2", url, approve=True)
    result = recorded["result"]
    assert result["labels_fingerprint"] != first_result["labels_fingerprint"]
    verdict = recorded["verdict"]
    assert verdict["state"] == "not_comparable"
    assert verdict["needs_approval"] and verdict["baseline_refused"]
    assert "not the baseline until approved" in verdict_line(recorded, UI, result)
    assert choose_branches(recorded, approve_baseline=True) == [
        BRANCH_OK,
        BRANCH_APPROVE,
    ]
    assert choose_branches(recorded) == [BRANCH_OK]  # not configured: no request
    with open_store(url) as store:  # not a baseline yet: the next run would ask again
        assert store.find_baseline("handbook.demo", "bm25", result["labels_fingerprint"]) is None

    subject, body = approval_request(recorded, result, UI, url, 3600)
    run_id = recorded["run_id"]
    assert subject == f"Accept run {run_id} as the baseline of handbook.demo × bm25?"
    assert "labels changed" in body
    assert f"Current baseline: run {first['run_id']}: top-1 " in body
    assert f"{UI}/runs/{run_id}" in body
    assert f"`retrieval-eval runs accept {run_id}`" in body
    assert f"within 1 h: run {first['run_id']} stays the baseline" in body
    questions = yaml.safe_load(golden.read_text())["questions"]
    assert not any(q["question"] in body for q in questions)  # figures and ids, no question

    message = accept_run(url, run_id)
    assert message.startswith(f"run {run_id} accepted as baseline for handbook.demo × bm25")
    with open_store(url) as store:
        accepted = store.find_baseline("handbook.demo", "bm25", result["labels_fingerprint"])
        assert accepted is not None and accepted.id == run_id
        old = store.find_baseline("handbook.demo", "bm25", first_result["labels_fingerprint"])
        assert old is not None and old.id == first["run_id"]  # the old labels' baseline stays


def test_a_regression_asks_and_without_an_approval_the_baseline_stays(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    golden = EXAMPLES / "golden" / "handbook.yaml"
    good = _record(_config(tmp_path, golden), "k1", url)
    degraded = _config(tmp_path, golden, min_score=1e9)
    recorded = _record(degraded, "k2", url, approve=True)
    result = recorded["result"]
    assert recorded["verdict"]["state"] == "regression"
    assert not recorded["verdict"]["needs_approval"]
    assert choose_branches(recorded, approve_baseline=True) == [
        BRANCH_REGRESSION,
        BRANCH_APPROVE,
    ]
    _subject, body = approval_request(recorded, result, UI, url, 90)
    assert "it regressed: " in body and " → " in body  # the figures before → after
    # the approval DAG reads the run its triggering event names back from the store, and asks
    # the same
    event = SimpleNamespace(extra={"run_id": recorded["run_id"]}, timestamp=None)
    run_id = approval_run_id({"retrieval-eval://approval/d": [event]})
    stored_recorded, stored_result = stored_for_approval(url, run_id)
    assert approval_request(stored_recorded, stored_result, UI, url, 90) == (
        _subject,
        body,
    )
    assert f"Current baseline: run {good['run_id']}" in body
    assert f"within 90 s: run {good['run_id']} stays the baseline" in body
    with open_store(url) as store:  # nobody approved: the baseline is the good run still
        found = store.find_baseline("handbook.demo", "bm25", result["labels_fingerprint"])
        assert found is not None and found.id == good["run_id"]


def test_the_approval_asks_about_the_newest_run_its_events_name() -> None:
    """Requests queued while an approval waits start one approval run: it asks about the
    newest; a run started without one is an error that says why."""
    from datetime import UTC, datetime

    import pytest

    def event(run_id: int | None, hour: int) -> SimpleNamespace:
        extra = {} if run_id is None else {"run_id": run_id}
        return SimpleNamespace(extra=extra, timestamp=datetime(2026, 1, 1, hour, tzinfo=UTC))

    events = {"retrieval-eval://approval/d": [event(7, 3), event(9, 5), event(8, 4)]}
    assert approval_run_id(events) == 9
    with pytest.raises(ValueError, match="request_approval"):
        approval_run_id({"retrieval-eval://approval/d": [event(None, 1)]})


def test_the_records_brief_carries_all_the_branch_tasks_read(tmp_path: Path) -> None:
    """The branch tasks pull the record's small view (``LabelledRun.brief``): without the
    questions, yet every branch, log line and worded verdict equals the whole record's, for a
    baseline and for a run with changed labels that asks for approval."""
    from retrieval_eval.airflow.lines import verdict_line, worded_verdict

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    golden = tmp_path / "handbook.yaml"
    golden.write_text((EXAMPLES / "golden" / "handbook.yaml").read_text())
    config = _config(tmp_path, golden)
    first = _record(config, "k1", url, approve=True)
    config = _config(tmp_path, _relabelled(golden, golden))
    second = _record(config, "k2", url, approve=True)
    for full in (first, second):
        brief = LabelledRun.brief(full)
        assert brief is not None and "questions" not in brief["result"]
        assert full["result"]["questions"]  # the whole record keeps them
        assert len(json.dumps(brief)) * 3 < len(json.dumps(full))
        assert choose_branches(brief, approve_baseline=True) == choose_branches(
            full, approve_baseline=True
        )
        base = "http://airflow.example/retrieval-eval"
        assert verdict_line(brief, base, brief["result"]) == verdict_line(
            full, base, full["result"]
        )
        assert worded_verdict(brief) == worded_verdict(full)

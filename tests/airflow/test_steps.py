"""The DAG's steps as plain functions: batching, fingerprint guard, reduce, persist, branch."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES

from retrieval_eval.airflow import steps
from retrieval_eval.errors import InvalidInputError, StoreUnavailableError

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")


def _set_file(path: Path, count: int) -> Path:
    questions = [
        {
            "id": f"q{i}",
            "question": f"refund {i}",
            "form": "match",
            "expected_document_ids": ["billing/refunds.md"],
        }
        for i in range(count)
    ]
    path.write_text(yaml.safe_dump({"identifier": "big.set", "questions": questions}))
    return path


@pytest.mark.parametrize(
    ("count", "max_batches", "expected"),
    [(46, 8, 8), (5, 8, 5), (1, 8, 1), (5000, 2000, 1000), (5000, 1024, 1000), (3000, 1024, 1000)],
)
def test_batches_cover_every_question_once_within_airflow_limits(
    tmp_path: Path, count: int, max_batches: int, expected: int
) -> None:
    path = _set_file(tmp_path / "s.yaml", count)
    batches = steps.plan_batches(None, str(path), max_batches)
    assert len(batches) <= min(max_batches, steps.MAX_MAP_LENGTH)
    assert len(batches) == expected
    covered = [i for b in batches for i in range(b["start"], b["stop"])]
    assert covered == list(range(count))
    assert len({b["fingerprint"] for b in batches}) == 1


def test_a_set_edited_during_the_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(InvalidInputError, match="changed while the run was in progress"):
        steps.retrieve_batch(CONFIG, "handbook.demo", "handbook_bm25", "not-the-fingerprint", 0, 3)


def test_retrieve_reduce_persist_branch(tmp_path: Path) -> None:
    (batch,) = steps.plan_batches(CONFIG, "handbook.demo", 1)
    done = steps.retrieve_batch(
        CONFIG, "handbook.demo", "handbook_bm25", batch["fingerprint"], 0, batch["stop"]
    )
    assert done["retriever"] == "handbook_bm25" and len(done["questions"]) == 46
    result = steps.reduce_results(CONFIG, "handbook.demo", "handbook_bm25", [done], run_key="k1")
    assert result["question_count"] == 46 and result["run_key"] == "k1"
    with pytest.raises(InvalidInputError, match="expected 46 question results, got 23"):
        half = {**done, "questions": done["questions"][:23]}
        steps.reduce_results(CONFIG, "handbook.demo", "handbook_bm25", [half], run_key="k2")

    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    first = steps.persist_result(CONFIG, result, store_url=url)
    again = steps.persist_result(CONFIG, result, store_url=url)  # a retried task
    assert first["run_id"] == again["run_id"]
    assert steps.choose_branch(first) == steps.BRANCH_OK
    assert steps.choose_branch({"verdict": {"state": "regression"}}) == steps.BRANCH_REGRESSION
    assert steps.choose_branch({"verdict": {"state": "invalid_run"}}) == steps.BRANCH_INVALID


def test_unreachable_store_spools_then_fails_the_task_for_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path))
    (batch,) = steps.plan_batches(CONFIG, "handbook.demo", 1)
    done = steps.retrieve_batch(
        CONFIG, "handbook.demo", "handbook_bm25", batch["fingerprint"], 0, batch["stop"]
    )
    result = steps.reduce_results(CONFIG, "handbook.demo", "handbook_bm25", [done], run_key="k3")
    with pytest.raises(StoreUnavailableError, match="spooled to") as info:
        steps.persist_result(CONFIG, result, store_url="postgresql://u:hunter22@127.0.0.1:1/none")
    assert "hunter22" not in str(info.value)
    assert list((tmp_path / "spool").glob("*.json"))


def _relabelled_config(tmp_path: Path, mode: str, removed: list[str]) -> str:
    """The demo evaluation over a copy of the corpus without ``removed`` (an index rebuild that
    dropped them), with ``lint: <mode>``."""
    import shutil

    corpus = tmp_path / "corpus"
    shutil.copytree(EXAMPLES / "corpus", corpus)
    for doc in removed:
        (corpus / doc).unlink()
    config = {
        "sets": [str(EXAMPLES / "golden" / "handbook.yaml")],
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(corpus)}},
        "lint": mode,
    }
    path = tmp_path / f"{mode}.yaml"
    path.write_text(yaml.safe_dump(config))
    return str(path)


def test_lint_finds_dead_labels_and_fail_mode_stops_the_run(tmp_path: Path) -> None:
    removed = ["billing/refunds.md", "billing/refunds-eu.md"]
    warn = _relabelled_config(tmp_path, "warn", removed)
    outcome = steps.lint_set(warn, "handbook.demo", "bm25", "warn")
    labels = outcome["dead_labels"]
    assert labels["checked"] and labels["dead_ids"] == sorted(removed)
    from retrieval_eval.golden.loaders import load_golden_set

    golden = load_golden_set(EXAMPLES / "golden" / "handbook.yaml")
    stale = [
        q.id
        for q in golden.questions
        if q.expected_document_ids and set(q.expected_document_ids) <= set(removed)
    ]
    assert stale and labels["stale_questions"] == stale
    assert outcome["errors"] >= len(stale)
    assert any(f["check"] == "dead_labels" for f in outcome["findings"])
    pattern = r"lint: fail.* 3 error findings \(dead_labels: 3\); labels need attention: 2 ids"
    with pytest.raises(steps.LintFailed, match=pattern):
        steps.lint_set(warn, "handbook.demo", "bm25", "fail")
    # a clean index passes in fail mode too
    clean = _relabelled_config(tmp_path / "clean", "fail", [])
    assert steps.lint_set(clean, "handbook.demo", "bm25", "fail")["dead_labels"]["dead_ids"] == []


def test_lint_findings_reach_the_result_and_the_labels_branch(tmp_path: Path) -> None:
    config = _relabelled_config(tmp_path, "warn", ["billing/refunds.md", "billing/refunds-eu.md"])
    lint = steps.lint_set(config, "handbook.demo", "bm25", "warn")
    (batch,) = steps.plan_batches(config, "handbook.demo", 1)
    done = steps.retrieve_batch(config, "handbook.demo", "bm25", batch["fingerprint"], 0, 46)
    result = steps.reduce_results(config, "handbook.demo", "bm25", [done], run_key="k", lint=lint)
    assert result["dead_labels"] == lint["dead_labels"]
    assert result["lint"]["errors"] == lint["errors"] and "dead_labels" not in result["lint"]
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    recorded = steps.persist_result(config, result, store_url=url)
    assert recorded["verdict"]["dead_ids"] == lint["dead_labels"]["dead_ids"]
    from retrieval_eval.store import open_store

    with open_store(url) as store:
        (stored,) = store.history("handbook.demo", "bm25")
    assert stored.result.lint is not None and stored.result.lint["errors"] == lint["errors"]
    assert stored.result.dead_labels is not None
    assert stored.result.dead_labels.stale_questions == lint["dead_labels"]["stale_questions"]
    assert steps.choose_branches(recorded) == [steps.BRANCH_OK, steps.BRANCH_LABELS]
    assert steps.choose_branches({"verdict": {"state": "regression"}}) == [steps.BRANCH_REGRESSION]

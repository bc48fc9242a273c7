"""The DAG's steps as plain functions: batching, fingerprint guard, reduce, persist, branch."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
import yaml
from dag_helpers import EXAMPLES
from helpers import read_only, tmpfs

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


@pytest.mark.parametrize(
    ("count", "min_batch_questions", "max_batches", "expected"),
    [(16, 25, 8, 1), (100, 25, 8, 4), (101, 25, 8, 5), (1000, 25, 8, 8), (46, 1, 4, 4)],
)
def test_batches_are_sized_from_the_set_and_max_batches_is_a_ceiling(
    tmp_path: Path, count: int, min_batch_questions: int, max_batches: int, expected: int
) -> None:
    assert steps.batch_count(count, max_batches, min_batch_questions) == expected
    path = _set_file(tmp_path / "s.yaml", count)
    batches = steps.plan_batches(
        None, str(path), max_batches, min_batch_questions=min_batch_questions
    )
    assert len(batches) == expected
    assert [i for b in batches for i in range(b["start"], b["stop"])] == list(range(count))


def test_the_config_sizes_batches_by_default() -> None:
    from retrieval_eval.config.models import EvaluationSpec

    spec = EvaluationSpec(set="s", retriever="r")
    assert (spec.max_batches, spec.min_batch_questions) == (8, 25)
    assert steps.batch_count(16, spec.max_batches, spec.min_batch_questions) == 1


def test_the_log_lines_say_the_figures_the_verdict_and_the_link() -> None:
    result = {
        "set_identifier": "handbook.demo",
        "retriever": "bm25",
        "question_count": 16,
        "error_count": 0,
        "top1_hits": 2,
        "top1_hit_rate": 0.125,
        "top3_hits": 4,
        "top3_hit_rate": 0.25,
    }
    assert steps.score_line(result) == (
        "scored 16 questions of handbook.demo × bm25: top-1 12.5% (2/16), "
        "top-3 25.0% (4/16); 0 errors"
    )
    verdict = {
        "state": "regression",
        "top1_baseline": 0.6875,
        "top1_current": 0.125,
        "top1_delta": -0.5625,
        "top3_baseline": 0.75,
        "top3_current": 0.25,
        "top3_delta": -0.5,
    }
    line = steps.verdict_line({"run_id": 12, "verdict": verdict}, "http://af/re/", result)
    assert line == (
        "top-1 68.8% → 12.5% (-56.2 pts), top-3 75.0% → 25.0% (-50.0 pts); regression; "
        "run 12: http://af/re/runs/12"
    )
    first = {
        "run_id": 1,
        "verdict": {"state": "baseline", "dead_ids": ["a"], "baseline_refused": True},
    }
    assert steps.verdict_line(first, None, result) == (
        "top-1 12.5% (2/16), top-3 25.0% (4/16); baseline (not accepted as the baseline: dead "
        "labels); labels need attention: 1 id no longer found; run 1"
    )
    assert "{" not in steps.verdict_line(first)


def test_the_run_page_base_falls_back_to_the_airflow_the_task_runs_in(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The log lines and the persist task's extra link name a run page even without
    ``airflow.ui_base_url``: Airflow's own ``[api] base_url``, else its UI's origin."""
    from retrieval_eval.airflow.links import dashboard_url

    monkeypatch.setenv("AIRFLOW__API__BASE_URL", "https://af.example/")
    assert dashboard_url("https://dash.example/re") == "https://dash.example/re"
    assert dashboard_url(None) == "https://af.example/retrieval-eval"
    monkeypatch.delenv("AIRFLOW__API__BASE_URL")
    assert dashboard_url(None) == "/retrieval-eval"


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
    assert steps.choose_branch(first) == steps.BRANCH_BASELINE  # a first run says so
    assert steps.choose_branch({"verdict": {"state": "no_regression"}}) == steps.BRANCH_OK
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


def test_a_run_the_store_and_every_folder_refused_fails_the_task_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spool and the temporary folder read-only (real tmpfs): the task fails, never
    reports the run as recorded, and says that it was written nowhere."""
    (batch,) = steps.plan_batches(CONFIG, "handbook.demo", 1)
    done = steps.retrieve_batch(
        CONFIG, "handbook.demo", "handbook_bm25", batch["fingerprint"], 0, batch["stop"]
    )
    result = steps.reduce_results(CONFIG, "handbook.demo", "handbook_bm25", [done], run_key="k4")
    with tmpfs(tmp_path / "home", size="64k") as home, tmpfs(tmp_path / "tmp", size="64k") as tmp:
        read_only(home)
        read_only(tmp)
        monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(home))
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        with pytest.raises(StoreUnavailableError, match="written nowhere"):
            steps.persist_result(CONFIG, result, store_url="postgresql://u@127.0.0.1:1/none")


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
    assert steps.choose_branches(recorded) == [steps.BRANCH_BASELINE, steps.BRANCH_LABELS]
    assert steps.choose_branches({"verdict": {"state": "regression"}}) == [steps.BRANCH_REGRESSION]


def test_the_lint_task_figures_power_at_the_evaluations_configured_depths(tmp_path: Path) -> None:
    """The lint task's power findings are at the depths the run will gate: the evaluation's own
    ``run.depths`` [1, 5], and for a pair without its own the config's, the seed's [1, 3]."""
    path = Path(_relabelled_config(tmp_path, "warn", []))
    config = yaml.safe_load(path.read_text())
    config["retrievers"]["bm25_seed"] = config["retrievers"]["bm25"]
    own = {"set": "handbook.demo", "retriever": "bm25", "run": {"depths": [1, 5]}}
    path.write_text(yaml.safe_dump({**config, "evaluations": [own]}))

    def power(retriever: str) -> list[str]:
        findings = steps.lint_set(str(path), "handbook.demo", retriever, "warn")["findings"]
        return [
            f["details"]["metric"]
            for f in findings
            if f["check"] == "power" and f["severity"] == "warning"
        ]

    assert power("bm25") == ["top1", "top5"]  # 46 questions: neither sees a 10-point drop
    assert power("bm25_seed") == ["top1", "top3"]


def test_the_dag_steps_gate_the_configured_depths(tmp_path: Path) -> None:
    """A config gating [1, 5] through the DAG's steps, its JSON as XCom carries it (depths as
    string keys): the batch asks for 20 ids and keeps 5, the score and persist log lines and
    the stored run have top-5, and a second run is judged at top-1 and top-5."""
    config = tmp_path / "retrieval_eval.yaml"
    text = (EXAMPLES / "retrieval_eval.yaml").read_text()
    text = text.replace("golden/handbook.yaml", str(EXAMPLES / "golden" / "handbook.yaml"))
    text = text.replace("corpus: corpus/", f"corpus: {EXAMPLES / 'corpus'}/")
    config.write_text(text.replace("run:\n", "run:\n  depths: [1, 5]\n", 1))
    (batch,) = steps.plan_batches(str(config), "handbook.demo", 1)
    done = steps.retrieve_batch(
        str(config), "handbook.demo", "handbook_bm25", batch["fingerprint"], 0, batch["stop"]
    )
    assert max(len(q["retrieved"]) for q in done["questions"]) == 5
    result = steps.reduce_results(
        str(config), "handbook.demo", "handbook_bm25", [done], run_key="d1"
    )
    assert result["settings"]["depths"] == [1, 5] and set(result["hits_at"]) == {"1", "5"}
    assert "top-1 65.2% (30/46), top-5 " in steps.score_line(result)
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    steps.persist_result(str(config), result, store_url=url)
    later = {"run_key": "d2", "started_at": "2030-01-01T03:00:00+00:00"}
    later["finished_at"] = "2030-01-01T03:00:05+00:00"
    second = steps.persist_result(str(config), {**result, **later}, store_url=url)
    assert list(second["verdict"]["by_depth"]) == ["1", "5"]
    line = steps.verdict_line(second, None, result)
    assert line.startswith("top-1 65.2% → 65.2% (+0.0 pts), top-5 ") and "no regression" in line
    from retrieval_eval.store import open_store

    with open_store(url) as store:
        stored = store.history("handbook.demo", "handbook_bm25")[0].result
    assert stored.depths == [1, 5] and stored.hits_at == {1: 30, 5: result["hits_at"]["5"]}

"""The labelled run as one workflow: batching, the set-changed guard, reduce, record, lint, the
store-down spool, each step's value passed through JSON as Airflow's XComs carry it."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from helpers import EXAMPLES, read_only, tmpfs

from retrieval_eval.errors import InvalidInputError, StoreUnavailableError
from retrieval_eval.workflows.base import WORKFLOWS, run_in_process
from retrieval_eval.workflows.labelled_run import (
    LabelledBatch,
    LabelledPart,
    LabelledReduced,
    LabelledRun,
    LabelledRunJob,
    LintFailed,
    batch_count,
)
from retrieval_eval.workflows.recording import RunRecord

CONFIG = str(EXAMPLES / "retrieval_eval.yaml")


def flow(
    config: str = CONFIG,
    set_name: str = "handbook.demo",
    retriever: str = "handbook_bm25",
    store: str | None = None,
    **job: Any,
) -> LabelledRun:
    spec = LabelledRunJob(config_path=config, set=set_name, retriever=retriever, **job)
    return LabelledRun(spec, store_url=lambda: store)


def planned(workflow: LabelledRun, max_batches: int = 1024) -> list[LabelledBatch]:
    """The plan as the execute tasks get it: JSON, validated again."""
    return [
        LabelledBatch.model_validate_json(batch.model_dump_json())
        for batch in workflow.plan(max_batches)
    ]


def parts(workflow: LabelledRun, batches: list[LabelledBatch]) -> list[LabelledPart]:
    return [
        LabelledPart.model_validate_json(workflow.execute(batch).model_dump_json())
        for batch in batches
    ]


def reduced(workflow: LabelledRun, done: list[LabelledPart]) -> LabelledReduced:
    return LabelledReduced.model_validate_json(workflow.reduce(done).model_dump_json())


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


def _config(tmp_path: Path) -> str:
    path = tmp_path / "c.yaml"
    corpus = str(EXAMPLES / "corpus")
    path.write_text(yaml.safe_dump({"retrievers": {"bm25": {"type": "lexical", "corpus": corpus}}}))
    return str(path)


def test_the_labelled_run_is_registered_by_name() -> None:
    assert WORKFLOWS["labelled_run"] is LabelledRun


@pytest.mark.parametrize(
    ("count", "max_batches", "expected"),
    [(46, 8, 8), (5, 8, 5), (1, 8, 1), (5000, 2000, 1000), (5000, 1024, 1000), (3000, 1024, 1000)],
)
def test_batches_cover_every_question_once(
    tmp_path: Path, count: int, max_batches: int, expected: int
) -> None:
    """The plan's one rule: at most the caller's batches (Airflow's map length) and the job's."""
    path = _set_file(tmp_path / "s.yaml", count)
    workflow = flow(_config(tmp_path), str(path), "bm25", max_batches=max_batches)
    batches = workflow.plan(max_batches=1000)
    assert len(batches) == expected
    assert [i for b in batches for i in range(b.start, b.stop)] == list(range(count))
    assert len({b.fingerprint for b in batches}) == 1
    assert len(workflow.plan(max_batches=1)) == 1  # the CLI's one batch


@pytest.mark.parametrize(
    ("count", "min_batch_questions", "max_batches", "expected"),
    [(16, 25, 8, 1), (100, 25, 8, 4), (101, 25, 8, 5), (1000, 25, 8, 8), (46, 1, 4, 4)],
)
def test_batches_are_sized_from_the_set_and_max_batches_is_a_ceiling(
    tmp_path: Path, count: int, min_batch_questions: int, max_batches: int, expected: int
) -> None:
    assert batch_count(count, max_batches, min_batch_questions) == expected
    path = _set_file(tmp_path / "s.yaml", count)
    workflow = flow(
        _config(tmp_path),
        str(path),
        "bm25",
        max_batches=max_batches,
        min_batch_questions=min_batch_questions,
    )
    batches = workflow.plan(1024)
    assert len(batches) == expected
    assert [i for b in batches for i in range(b.start, b.stop)] == list(range(count))


def test_the_config_sizes_batches_by_default() -> None:
    from retrieval_eval.config.models import EvaluationSpec

    spec = EvaluationSpec(set="s", retriever="r")
    assert (spec.max_batches, spec.min_batch_questions) == (8, 25)
    assert batch_count(16, spec.max_batches, spec.min_batch_questions) == 1


def test_a_set_edited_during_the_run_is_refused() -> None:
    batch = LabelledBatch(start=0, stop=3, fingerprint="not-the-fingerprint")
    with pytest.raises(InvalidInputError, match="changed while the run was in progress"):
        flow().execute(batch)


def test_plan_execute_reduce_record_through_json(tmp_path: Path) -> None:
    """Four batches joined give the one-batch run's figures; recording twice (a retried task)
    keeps one run; a missing batch is refused."""
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    workflow = flow(store=url, run_key="k1", max_batches=4)
    batches = planned(workflow, 4)
    assert len(batches) == 4
    done = parts(workflow, batches)
    assert done[0].retriever == "handbook_bm25" and sum(len(p.questions) for p in done) == 46
    joined = reduced(workflow, done)
    result = joined.result
    assert result.question_count == 46 and result.run_key == "k1"
    single = run_in_process(flow(run_key="one"))  # no store: judged as a first run
    assert single.run_id is None and not single.saved
    assert result.hits_at == single.result.hits_at
    assert [q.id for q in result.questions] == [q.id for q in single.result.questions]
    assert joined.power.model_dump() == single.power.model_dump()  # type: ignore[union-attr]
    with pytest.raises(InvalidInputError, match="expected 46 question results, got 24"):
        workflow.reduce(done[:2])  # a batch lost

    first = workflow.record(joined)
    again = workflow.record(joined)  # a retried task
    assert first.run_id is not None and first.run_id == again.run_id
    assert first.verdict.state == "baseline" and workflow.failure(first) is None
    record = RunRecord.model_validate_json(first.model_dump_json())  # the XCom, read back
    assert record.result.run_key == "k1" and record.power is not None


def test_unreachable_store_spools_then_the_outcome_fails_for_a_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path))
    workflow = flow(store="postgresql://u:hunter22@127.0.0.1:1/none", run_key="k3")
    record = workflow.record(reduced(workflow, parts(workflow, planned(workflow))))
    failure = workflow.failure(record)
    assert isinstance(failure, StoreUnavailableError) and "spooled to" in str(failure)
    assert "hunter22" not in str(failure) and "hunter22" not in record.model_dump_json()
    (path,) = (tmp_path / "spool").glob("*.json")
    assert record.spool_path == path and record.run_id is None and not record.saved
    assert "hunter22" not in path.read_text()


def test_a_run_the_store_and_every_folder_refused_fails_saying_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The spool and the temporary folder read-only (real tmpfs): the outcome fails, never
    reports the run as recorded, and says that it was written nowhere."""
    workflow = flow(store="postgresql://u@127.0.0.1:1/none", run_key="k4")
    joined = reduced(workflow, parts(workflow, planned(workflow)))
    with tmpfs(tmp_path / "home", size="64k") as home, tmpfs(tmp_path / "tmp", size="64k") as tmp:
        read_only(home)
        read_only(tmp)
        monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(home))
        monkeypatch.setattr(tempfile, "tempdir", str(tmp))
        record = workflow.record(joined)
    assert record.spool_path is None and not record.saved
    assert "written nowhere" in str(workflow.failure(record))


def _relabelled_config(tmp_path: Path, mode: str, removed: list[str]) -> str:
    """The demo evaluation over a copy of the corpus without ``removed`` (an index rebuild that
    dropped them), with ``lint: <mode>``."""
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


def test_lint_finds_dead_labels_and_fail_mode_stops_the_plan(tmp_path: Path) -> None:
    removed = ["billing/refunds.md", "billing/refunds-eu.md"]
    warn = _relabelled_config(tmp_path, "warn", removed)
    batches = planned(flow(warn, retriever="bm25", lint="warn", max_batches=2), 2)
    assert batches[1].lint is None  # the first batch carries the lint to reduce
    outcome = batches[0].lint
    assert outcome is not None
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
    with pytest.raises(LintFailed, match=pattern):
        flow(warn, retriever="bm25", lint="fail").plan()
    # a clean index passes in fail mode too
    clean = _relabelled_config(tmp_path / "clean", "fail", [])
    (batch,) = flow(clean, retriever="bm25", lint="fail").plan()
    assert batch.lint is not None and batch.lint["dead_labels"]["dead_ids"] == []


def test_lint_findings_reach_the_result_and_the_record(tmp_path: Path) -> None:
    removed = ["billing/refunds.md", "billing/refunds-eu.md"]
    config = _relabelled_config(tmp_path, "warn", removed)
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    workflow = flow(config, retriever="bm25", store=url, lint="warn", run_key="k")
    batches = planned(workflow)
    lint = batches[0].lint
    assert lint is not None
    result = reduced(workflow, parts(workflow, batches)).result
    assert result.dead_labels is not None
    assert result.dead_labels.model_dump(mode="json") == lint["dead_labels"]
    assert result.lint is not None and result.lint["errors"] == lint["errors"]
    assert "dead_labels" not in result.lint
    record = workflow.record(reduced(workflow, parts(workflow, batches)))
    assert record.verdict.dead_ids == lint["dead_labels"]["dead_ids"]
    from retrieval_eval.store import open_store

    with open_store(url) as store:
        (stored,) = store.history("handbook.demo", "bm25")
    assert stored.result.lint is not None and stored.result.lint["errors"] == lint["errors"]
    assert stored.result.dead_labels is not None
    assert stored.result.dead_labels.stale_questions == lint["dead_labels"]["stale_questions"]


def test_without_lint_the_first_batch_finds_the_dead_labels_once(tmp_path: Path) -> None:
    """The CLI's way, and a DAG's with ``lint: off``: the first batch asks while it has the
    retriever open; the other batches do not ask again."""
    config = _relabelled_config(tmp_path, "off", ["billing/refunds.md"])
    workflow = flow(config, retriever="bm25", max_batches=3)
    done = parts(workflow, planned(workflow, 3))
    assert done[0].dead_labels is not None and done[0].dead_labels.dead_ids == [
        "billing/refunds.md"
    ]
    assert [p.dead_labels for p in done[1:]] == [None, None]
    result = workflow.reduce(done).result
    assert result.dead_labels == done[0].dead_labels and result.lint is None


def test_the_lint_figures_power_at_the_evaluations_configured_depths(tmp_path: Path) -> None:
    """The plan's power findings are at the depths the run will gate: the evaluation's own
    ``run.depths`` [1, 5], and for a pair without its own the config's, the seed's [1, 3]."""
    path = Path(_relabelled_config(tmp_path, "warn", []))
    config = yaml.safe_load(path.read_text())
    config["retrievers"]["bm25_seed"] = config["retrievers"]["bm25"]
    own = {"set": "handbook.demo", "retriever": "bm25", "run": {"depths": [1, 5]}}
    path.write_text(yaml.safe_dump({**config, "evaluations": [own]}))

    def power(retriever: str) -> list[str]:
        (batch,) = flow(str(path), retriever=retriever, lint="warn").plan()
        assert batch.lint is not None
        return [
            f["details"]["metric"]
            for f in batch.lint["findings"]
            if f["check"] == "power" and f["severity"] == "warning"
        ]

    assert power("bm25") == ["top1", "top5"]  # 46 questions: neither sees a 10-point drop
    assert power("bm25_seed") == ["top1", "top3"]


def test_the_configured_depths_are_gated_through_json(tmp_path: Path) -> None:
    """A config gating [1, 5], every step's value through JSON: the batch asks for 20 ids and
    keeps 5, the stored run has top-5, and a second run is judged at top-1 and top-5."""
    config = tmp_path / "retrieval_eval.yaml"
    text = (EXAMPLES / "retrieval_eval.yaml").read_text()
    text = text.replace("golden/handbook.yaml", str(EXAMPLES / "golden" / "handbook.yaml"))
    text = text.replace("corpus: corpus/", f"corpus: {EXAMPLES / 'corpus'}/")
    config.write_text(text.replace("run:\n", "run:\n  depths: [1, 5]\n", 1))
    url = f"sqlite:///{tmp_path / 'r.sqlite'}"
    workflow = flow(str(config), store=url, run_key="d1")
    done = parts(workflow, planned(workflow))
    assert max(len(q.retrieved) for q in done[0].questions) == 5
    joined = reduced(workflow, done)
    assert joined.result.settings.depths == [1, 5] and set(joined.result.hits_at) == {1, 5}
    workflow.record(joined)
    from datetime import UTC, datetime

    later = joined.result.model_copy(
        update={
            "run_key": "d2",
            "started_at": datetime(2030, 1, 1, 3, tzinfo=UTC),
            "finished_at": datetime(2030, 1, 1, 3, 0, 5, tzinfo=UTC),
        }
    )
    second = workflow.record(joined.model_copy(update={"result": later}))
    assert list(second.verdict.by_depth) == [1, 5] and second.verdict.state == "no_regression"
    from retrieval_eval.store import open_store

    with open_store(url) as store:
        stored = store.history("handbook.demo", "handbook_bm25")[0].result
    assert stored.depths == [1, 5] and stored.hits_at == {1: 30, 5: joined.result.hits_at[5]}


def test_a_job_names_no_unknown_field() -> None:
    """A DAG's job dict with a typo fails loudly instead of being ignored."""
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="max_batchs"):
        LabelledRunJob.model_validate({"set": "s", "retriever": "r", "max_batchs": 3})

"""The labelling DAG's test world, shared by its ``dag.test()`` runs (test_labelling_dag.py) and
the real Celery deployment (test_deployment_celery.py): a small set with people's grades, a store
holding one run of it, a config with the ``labelling:`` entry, and a real OpenAI-compatible judge
server on 127.0.0.1 grading by passage (tests/servers/judge_server.py)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import EXAMPLES
from servers.judge_server import JudgeBehaviour, start

from retrieval_eval.config.models import load_config
from retrieval_eval.labels.pooling import excerpt
from retrieval_eval.store import open_store
from retrieval_eval.workflows.base import run_in_process
from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob, opened_retriever

DAG_ID = "retrieval_eval_labelling__handbook_demo__sim"
KEY = "sk-labelling-test-5d1e"
QUESTIONS = 8


def world(
    folder: Path, slack: bool = False, connection: bool = False, store: str | None = None
) -> dict[str, Any]:
    """A small set (the demo's first questions, each with one document people graded 0), a
    store holding one run of it, and a config with the labelling entry (the judge's URL is
    filled in by the caller). With ``connection`` the DAG's store is the Airflow connection
    ``lab_store``'s and the config's ``store:`` a decoy no task may touch. ``store``: the
    store's URL (default: a SQLite file in ``folder``)."""
    folder.mkdir()
    demo = yaml.safe_load((EXAMPLES / "golden" / "handbook.yaml").read_text())
    questions = demo["questions"][:QUESTIONS]
    targets = {doc for q in questions for doc in q["expected_document_ids"]}
    others = sorted(
        str(p.relative_to(EXAMPLES / "corpus"))
        for p in (EXAMPLES / "corpus").rglob("*.md")
        if str(p.relative_to(EXAMPLES / "corpus")) not in targets
    )
    not_relevant = others[:QUESTIONS]
    for question, doc in zip(questions, not_relevant, strict=True):
        question["grades"] = {doc: 0}
    set_file = folder / "set.yaml"
    set_file.write_text(yaml.safe_dump({**demo, "questions": questions}), encoding="utf-8")
    store = store or f"sqlite:///{folder / 'store.sqlite'}"
    config: dict[str, Any] = {
        "store": f"sqlite:///{folder / 'decoy.sqlite'}" if connection else store,
        "sets": [str(set_file)],
        "retrievers": {"bm25": {"type": "lexical", "corpus": str(EXAMPLES / "corpus")}},
        "judges": {
            "sim": {
                "type": "openai",
                "model": "sim-1",
                "base_url": "http://127.0.0.1:9/v1",
                "api_key_from_env": "SIM_JUDGE_KEY",
                "max_concurrency": 4,
                "input_price_per_1k": 0.5,
                "output_price_per_1k": 2.0,
                "timeout_s": 5,
                "deadline_s": 60,
                "backoff_s": 0.05,
                "min_kappa": 0.6,
            }
        },
        "labelling": [
            {
                "set": "handbook.demo",
                "judge": "sim",
                "retrievers": ["bm25"],
                "depth": 3,
                "max_batches": 2,
                "alerts": [{"type": "slack", "connection_id": "slack_lab"}] if slack else [],
            }
        ],
        "airflow": {
            "retries": 0,
            "ui_base_url": "http://airflow.example/retrieval-eval",
            **({"store_connection_id": "lab_store"} if connection else {}),
        },
    }
    path = folder / "retrieval_eval.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    job = LabelledRunJob(config_path=str(path), set="handbook.demo", retriever="bm25")
    recorded = run_in_process(LabelledRun(job, store_url=lambda: store))
    ranked = {q.id: list(q.retrieved[:3]) for q in recorded.result.questions}
    new = next(
        doc for q in questions for doc in ranked[q["id"]] if doc not in {*targets, *not_relevant}
    )
    with opened_retriever(load_config(path), "bm25") as retriever:
        texts = retriever.document_texts([*targets, *not_relevant, new, *others])
    return {
        "config": path,
        "store": store,
        "set_file": set_file,
        "targets": targets,
        "new": new,
        "texts": {doc: excerpt(text) for doc, text in texts.items()},
        "run_id": recorded.run_id,
    }


def judge(world: dict[str, Any], agree: bool) -> tuple[Any, str]:
    """A judge server grading by passage: agreeing with people (targets 1, the new document 1,
    the rest 0) or against them (targets 0, the rest 3)."""
    grades: defaultdict[str, int] = defaultdict(lambda: 0 if agree else 3)
    for doc in world["targets"]:
        grades[world["texts"][doc]] = 1 if agree else 0
    if agree:
        grades[world["texts"][world["new"]]] = 1
    server, url = start(JudgeBehaviour(key=KEY, grades=grades))
    config = yaml.safe_load(world["config"].read_text())
    config["judges"]["sim"]["base_url"] = url
    world["config"].write_text(yaml.safe_dump(config), encoding="utf-8")
    return server, url


def assert_promoted(world: dict[str, Any], log: str) -> list[Any]:
    """What an approved run of a calibrated judge leaves: cost and progress lines in the task
    logs, the judge's grades stored (rater ``judge:sim``, with its identity), its passed
    calibration stored, the set file's version 2 with the judge's new target, and the config's
    decoy store untouched. Returns the set's stored runs, for the caller's re-judging checks."""
    assert "graded; cost $" in log and "judgment(s) stored" in log
    assert "Cohen's κ 1.000" in log and "min_kappa 0.60: passed" in log
    with open_store(world["store"]) as store:
        rows = store.judgments.stored("handbook.demo")
        machine = [s for s in rows if s.judgment.rater == "judge:sim"]
        assert machine and all(s.judge_identity for s in machine)
        (calibration,) = store.judges.calibrations("handbook.demo")
        assert calibration.passed and calibration.kappa == pytest.approx(1.0)
        runs = store.runs.runs_of_set("handbook.demo")
    assert not (world["config"].parent / "decoy.sqlite").exists()  # the connection's store only
    promoted = yaml.safe_load(world["set_file"].read_text())
    assert promoted["version"] == 2
    (entry,) = promoted["changelog"]
    assert entry["raters"] == ["judge:sim"] and entry["added"]
    assert any(world["new"] in q["expected_document_ids"] for q in promoted["questions"])
    return list(runs)

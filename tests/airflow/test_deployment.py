"""Real deployments: Airflow's components as separate processes, PostgreSQL metadata, REST API v2.

Selected alone with ``pytest -m deployment``; ``make test`` and CI run them with the rest.

1. LocalExecutor: SciFact's 300 test claims (the demo set where ../shared/data is absent) with
   the lexical retriever: a baseline run with the reference figures, a degraded run that alerts
   once through a loopback Slack server, a ``fail_on_regression`` run that ends failed after its
   alert, a cleared ``persist`` that stores nothing twice and alerts nobody twice, and an asset
   event posted through the REST API with an ``extra`` naming the index build, which starts a
   run that stores that index version (and sends the "recovered" that closes the regression);
   then the demo set's ``approve_baseline`` DAG: a run under changed labels ends and asks in the
   approval DAG, where, approved through REST API v2, it becomes the baseline; a regression
   fails its DAG run at once, asks too and, rejected, leaves it. Every
   figure checked comes from the set that ran: a retriever that returns nothing still hits the
   questions that expect nothing (the demo set has three, SciFact none).
The same started Airflow runs the index-build examples (examples/dags/index_build_gate.py):
the gated build promotes a good index and not a corrupted one, and the promotion DAG started by
the evaluation's verdict event reads the verdict and promotes.
The CeleryExecutor deployment is in ``test_deployment_celery.py``: a module of its own, so that
the two deployments run on the two test workers at once.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml
from dag_helpers import EXAMPLES, ROOT
from deployment import Deployment, deployment, pg_schema
from helpers import REQUIRE_DATA_ENV, required, shared_collection, shared_data
from slack_server import RecordingServer

pytestmark = [pytest.mark.airflow, pytest.mark.deployment]

WEBHOOK_SECRET = "T000/B000/deploySECRET"
PG_PASSWORD = "pgSECRETpw-123"  # trust auth ignores it; it must still never reach a log
INDEX_ASSET = "index://retrieval-eval-deploy/corpus"
# the approval DAG's set: the demo set under its own identifier, so that it never clashes with
# the evaluation's set, which is the demo set itself where ../shared/data is absent
APPROVAL = "handbook.approval"
APPROVAL_DAG = "retrieval_eval__handbook_approval__handbook"
# where its runs' approvals wait: a DAG of its own, started by the evaluation's request
ASKING_DAG = "retrieval_eval_approval__handbook_approval__handbook"
# examples/dags/index_build_gate.py: the gated build, the build that only announces its version,
# the evaluation its event starts, and the promotion the verdict's event starts
GATED, BUILD = "demo_index_build_gated", "demo_index_build"
CANDIDATE_DAG = "retrieval_eval__handbook_demo__handbook_candidate"
PROMOTION = "demo_index_promotion"
GATE_DAGS = (GATED, BUILD, CANDIDATE_DAG, PROMOTION)


def _approval_set(folder: Path) -> Path:
    """A copy of the demo set named :data:`APPROVAL`, in ``folder``."""
    data = yaml.safe_load((EXAMPLES / "golden" / "handbook.yaml").read_text())
    path = folder / "approval.yaml"
    path.write_text(yaml.safe_dump({**data, "identifier": APPROVAL}, sort_keys=False))
    return path


def _evaluation_set(folder: Path) -> tuple[Path, Path, dict[str, Any]]:
    """(set file, corpus, expected figures): SciFact's test split when the shared data is there.

    ``count`` and ``nothing`` (the share of questions that expect no document: the hit rate at
    every depth of a retriever that returns nothing) are read from the set file itself.
    """
    scifact = shared_data() / "scifact"
    if required(REQUIRE_DATA_ENV):
        shared_collection("scifact")  # in CI a missing collection fails instead of falling back
    if (scifact / "queries.jsonl").is_file():
        from retrieval_eval.golden.importers import import_beir
        from retrieval_eval.golden.loaders import dump_golden_set

        golden = import_beir(scifact, split="test", identifier="scifact")
        path = folder / "scifact.yaml"
        dump_golden_set(golden, path)
        # the lexical defaults' published figures (tests/evaluation/test_scifact_reference.py)
        reference = {"top1": 0.5500, "top3": 0.7267}
        return path, scifact / "corpus.jsonl", {**_figures_of(path), **reference}
    path = EXAMPLES / "golden" / "handbook.yaml"
    return path, EXAMPLES / "corpus", _figures_of(path)


def _figures_of(path: Path) -> dict[str, Any]:
    from retrieval_eval.golden.loaders import load_golden_set

    questions = load_golden_set(path).questions
    expect_nothing = sum(1 for q in questions if not q.expected_document_ids)
    return {"count": len(questions), "nothing": expect_nothing / len(questions)}


def _write_config(
    path: Path,
    golden: Path,
    corpus: Path,
    approval: dict[str, Any] | None = None,
    **lexical: Any,
) -> None:
    """The evaluation of ``golden`` with the lexical retriever (``lexical``: its options), and
    the demo set's ``approve_baseline`` evaluation (as :data:`APPROVAL`): ``approval`` gives that set's file and its
    retriever's options."""
    identifier = yaml.safe_load(golden.read_text())["identifier"]
    approval = approval or {}
    path.write_text(
        yaml.safe_dump(
            {
                "sets": [str(golden), str(approval.get("set") or _approval_set(path.parent))],
                "retrievers": {
                    "bm25": {"type": "lexical", "corpus": str(corpus), **lexical},
                    "handbook": {
                        "type": "lexical",
                        "corpus": str(EXAMPLES / "corpus"),
                        **approval.get("lexical", {}),
                    },
                },
                "evaluations": [
                    {
                        "set": identifier,
                        "retriever": "bm25",
                        "schedule": None,
                        "assets": [INDEX_ASSET],  # an index build's event starts a run too
                        "max_batches": 4,
                        "min_batch_questions": 1,
                        "alerts": [{"type": "slack", "connection_id": "slack_test"}],
                    },
                    {
                        "set": APPROVAL,
                        "retriever": "handbook",
                        "schedule": None,
                        "max_batches": 1,
                        "approve_baseline": True,
                        "fail_on_regression": True,
                        # every run of it takes longer: the scheduler notices the missed
                        # deadline and the triggerer sends the "not finished" alert
                        "deadline_s": 1,
                        "alerts": [
                            {"type": "slack", "connection_id": "slack_test", "kinds": ["deadline"]}
                        ],
                    },
                ],
                "airflow": {
                    "store_connection_id": "retrieval_eval_db",
                    "retries": 2,
                    "retry_delay_s": 2,
                    "max_retry_delay_s": 10,
                    "ui_base_url": "http://airflow.example/retrieval-eval",
                },
            }
        )
    )


@pytest.fixture(scope="module")
def store_schema(pg_url: str) -> Iterator[str]:
    with pg_schema(pg_url, "re_deploy") as schema:
        yield schema


def _dags_folder(folder: Path) -> Path:
    """The deployment's DAGs folder: the package's DAG file and the index-build examples (links:
    each file finds its config and corpus where it really is)."""
    folder.mkdir()
    (folder / "retrieval_eval_dags.py").symlink_to(ROOT / "dags" / "retrieval_eval_dags.py")
    for name in ("index_build_gate.py", "demo_index.py", ".airflowignore"):
        (folder / name).symlink_to(EXAMPLES / "dags" / name)
    return folder


def _store_url(pg_url: str, schema: str) -> str:
    scheme, rest = pg_url.split("://", 1)
    user, host = rest.split("@", 1)
    return f"{scheme}://{user}:{PG_PASSWORD}@{host}?options=-csearch_path%3D{schema}"


def _rows(url: str, run_key: str) -> list[Any]:
    from retrieval_eval.store import open_store

    with open_store(url) as store:
        run = store.runs.by_key(run_key)
        return [] if run is None else [run]


@dataclass(frozen=True)
class Local:
    """The module's LocalExecutor deployment and what its tests need of it."""

    af: Deployment
    folder: Path
    config: Path
    golden: Path
    corpus: Path
    expected: dict[str, Any]
    dag_id: str
    store_url: str
    slack: RecordingServer


@pytest.fixture(scope="module")
def local(
    tmp_path_factory: pytest.TempPathFactory, pg_url: str, store_schema: str
) -> Iterator[Local]:
    """One started Airflow with both DAGs: the evaluation and the demo set's approval DAG."""
    tmp_path = tmp_path_factory.mktemp("local_deployment")
    golden, corpus, expected = _evaluation_set(tmp_path)
    identifier = yaml.safe_load(golden.read_text())["identifier"]
    dag_id = f"retrieval_eval__{identifier.replace('.', '_')}__bm25"
    config = tmp_path / "retrieval_eval.yaml"
    _write_config(config, golden, corpus)
    store_url = _store_url(pg_url, store_schema)
    with RecordingServer() as slack:
        env = {
            "AIRFLOW__CORE__DAGS_FOLDER": str(_dags_folder(tmp_path / "dags")),
            "RETRIEVAL_EVAL_CONFIG": str(config),
            "RETRIEVAL_EVAL_HOME": str(tmp_path / "re_home"),
            "AIRFLOW_CONN_RETRIEVAL_EVAL_DB": store_url,
            "AIRFLOW_CONN_SLACK_TEST": json.dumps(
                {
                    "conn_type": "slackwebhook",
                    "host": f"http://127.0.0.1:{slack.port}",
                    "password": WEBHOOK_SECRET,
                }
            ),
        }
        with deployment(tmp_path / "airflow", pg_url, env=env) as af:
            af.wait_for_dag(dag_id)
            af.wait_for_dag(APPROVAL_DAG)
            af.wait_for_dag(ASKING_DAG)  # new DAGs start paused: unpaused as the evaluations
            for example in GATE_DAGS:
                af.wait_for_dag(example)
            yield Local(af, tmp_path, config, golden, corpus, expected, dag_id, store_url, slack)


@pytest.mark.timeout(1200)
def test_local_executor_deployment(local: Local) -> None:
    af, config, golden, corpus, expected = (
        local.af, local.config, local.golden, local.corpus, local.expected
    )  # fmt: skip
    dag_id, store_url, slack = local.dag_id, local.store_url, local.slack
    # 1. the baseline: every task succeeds, the row holds the reference figures
    first = af.trigger(dag_id, "baseline")
    assert af.wait(dag_id, first) == "success"
    tis = af.task_instances(dag_id, first)
    assert {k for k in tis if k.startswith("retrieve[")} == {f"retrieve[{i}]" for i in range(4)}
    assert tis["baseline"]["state"] == "success"
    assert tis["alert_regression"]["state"] == "skipped"
    assert all(t["state"] in ("success", "skipped") for t in tis.values()), tis
    (baseline,) = _rows(store_url, f"airflow:{dag_id}:{first}")
    assert baseline.result.question_count == expected["count"]
    assert baseline.verdict_state == "baseline"
    if "top1" in expected:
        assert baseline.result.top1_hit_rate == pytest.approx(expected["top1"], abs=1e-4)
        assert baseline.result.top3_hit_rate == pytest.approx(expected["top3"], abs=1e-4)
    # the DAG run points at its run page: persist's extra link, as the API server serves
    # it (the worker computed it; the serialized DAG names it)
    page = f"http://airflow.example/retrieval-eval/runs/{baseline.id}"
    links = af.api("GET", f"/dags/{dag_id}/dagRuns/{first}/taskInstances/persist/links")
    assert links["extra_links"] == {"Run page": page}

    # 2. a degraded retriever (nothing scores above min_score): one regression alert
    _write_config(config, golden, corpus, min_score=1e9)
    second = af.trigger(dag_id, "degraded")
    assert af.wait(dag_id, second) == "success"
    tis = af.task_instances(dag_id, second)
    assert tis["alert_regression"]["state"] == "success"
    assert tis["no_regression"]["state"] == "skipped"
    assert len(slack.requests) == 1
    text = slack.requests[0]["body"]["text"]
    assert slack.requests[0]["path"] == "/" + WEBHOOK_SECRET
    (degraded,) = _rows(store_url, f"airflow:{dag_id}:{second}")
    assert degraded.verdict_state == "regression"
    nothing = expected["nothing"]
    assert degraded.result.top1_hit_rate == pytest.approx(nothing, abs=1e-9)
    assert degraded.result.top3_hit_rate == pytest.approx(nothing, abs=1e-9)
    top1, top3 = baseline.result.top1_hit_rate, baseline.result.top3_hit_rate
    assert f"Top-1: {top1 * 100:.1f}% → {nothing * 100:.1f}%" in text
    assert f"Top-3: {top3 * 100:.1f}% → {nothing * 100:.1f}%" in text
    assert f"Run {degraded.id} (baseline run {baseline.id})" in text

    # 3. fail_on_regression: the run ends failed, after its alert went out
    third = af.trigger(dag_id, "failing", conf={"fail_on_regression": True})
    assert af.wait(dag_id, third) == "failed"
    tis = af.task_instances(dag_id, third)
    assert tis["alert_regression"]["state"] == "failed"
    assert tis["alert_regression"]["try_number"] == 1  # a deliberate failure: no retry
    assert len(slack.requests) == 2

    # 4. clearing persist of the degraded run: same row, no second alert
    af.clear(dag_id, second, "persist")
    assert af.wait(dag_id, second) == "success"
    tis = af.task_instances(dag_id, second)
    assert tis["persist"]["try_number"] >= 2  # it did run again
    assert tis["alert_regression"]["state"] == "success"
    assert [r.id for r in _rows(store_url, f"airflow:{dag_id}:{second}")] == [degraded.id]
    assert len(slack.requests) == 2

    # 5. the index-build job posts an asset event naming its build: the run it starts
    #    stores that index version (the retriever is healthy again: one "recovered", the
    #    message that closes the alerted regression)
    _write_config(config, golden, corpus)
    event = af.post_asset_event(INDEX_ASSET, {"index_version": "2026-11-30.2"})
    assert event["extra"]["index_version"] == "2026-11-30.2"
    fifth = af.wait_for_triggered(dag_id, {first, second, third})
    assert af.wait(dag_id, fifth) == "success"
    (indexed,) = _rows(store_url, f"airflow:{dag_id}:{fifth}")
    assert indexed.result.index_version == "2026-11-30.2"
    assert indexed.result.package_version  # the installed retrieval-eval's version
    assert indexed.verdict_state == "no_regression"
    assert indexed.result.top1_hit_rate == baseline.result.top1_hit_rate
    assert len(slack.requests) == 3
    recovered = slack.requests[2]["body"]["text"]
    assert recovered.startswith("Retrieval recovered: ")
    assert f"Run {indexed.id} (baseline run {baseline.id})" in recovered

    logs = af.logs()
    assert "(index 2026-11-30.2): top-1" in logs  # the score task named the build
    assert f"; baseline; run {baseline.id}: {page}" in logs  # persist's human line
    assert "Returned value was: {" not in logs  # no task logs its JSON as a dict repr
    assert "Top-1:" in logs  # the alert task logged what it sent...
    assert WEBHOOK_SECRET not in logs  # ...and no secret anywhere
    assert PG_PASSWORD not in logs


@pytest.mark.timeout(1200)
def test_the_index_build_gates_its_promotion(local: Local) -> None:
    """The example index-build DAGs on the running scheduler: the gated build promotes a good
    index and skips the promotion of a corrupted one; a build that only announces its version
    starts the evaluation DAG, whose verdict's event starts the promotion DAG, which reads the
    verdict (index version, state) and promotes."""
    af = local.af
    live = local.folder / "re_home" / "demo-index" / "live"
    # 1. a good build: a baseline, promoted
    good = af.trigger(GATED, "good")
    assert af.wait(GATED, good) == "success"
    tis = af.task_instances(GATED, good)
    assert tis["retrieval_gate"]["state"] == "success"
    assert tis["promote"]["state"] == "success"
    assert os.readlink(live) == "versions/v1"
    # 2. a corrupted build: a regression; the gate skips the promotion, live stays on v1
    bad = af.trigger(GATED, "corrupted", conf={"degraded": True})
    assert af.wait(GATED, bad) == "success"
    tis = af.task_instances(GATED, bad)
    group = "evaluate__handbook_demo__handbook_candidate"
    assert tis[f"{group}.alert_regression"]["state"] == "success"
    assert tis["promote"]["state"] == "skipped"
    assert os.readlink(live) == "versions/v1"
    # 3. through assets: build v3 -> its event starts the evaluation -> the verdict's event
    #    starts the promotion, which reads it and promotes v3
    built = af.trigger(BUILD, "announced")
    assert af.wait(BUILD, built) == "success"
    evaluated = af.wait_for_triggered(CANDIDATE_DAG, set())
    assert af.wait(CANDIDATE_DAG, evaluated) == "success"
    promoted = af.wait_for_triggered(PROMOTION, set())
    assert af.wait(PROMOTION, promoted) == "success"
    assert os.readlink(live) == "versions/v3"
    events = af.api("GET", "/assets/events", params={"source_dag_id": CANDIDATE_DAG, "limit": 10})[
        "asset_events"
    ]
    (event,) = [e for e in events if e["source_run_id"] == evaluated]
    assert event["uri"] == "retrieval-eval://handbook.demo/handbook_candidate"
    extra = event["extra"]
    assert (extra["state"], extra["passed"], extra["index_version"]) == (
        "no_regression",
        True,
        "v3",
    )
    assert extra["run_key"] == f"airflow:{CANDIDATE_DAG}:{evaluated}"
    assert extra["run_page"].endswith(f"/retrieval-eval/runs/{extra['run_id']}")
    logs = af.logs()
    assert "retrieval gate: no regression of handbook.demo × handbook_candidate (index v3)" in logs
    assert "the tasks after retrieval_gate are skipped" in logs


@pytest.mark.timeout(1200)
def test_approve_baseline_through_rest(local: Local) -> None:
    """The demo set's ``approve_baseline`` DAG in the same deployment (it reads no shared data:
    CI runs this module once, with the shared data: see .ci/run)."""
    _approval_steps(
        local.af, local.config, local.golden, local.corpus, local.store_url, local.folder
    )
    # 8. its DAG's deadline (1 s) was missed by every run: Airflow's DeadlineAlert, on the real
    #    scheduler and triggerer, sent "not finished" (only to the channel taking `deadline`)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not _deadline_alerts(local.slack):
        time.sleep(1)
    missed = _deadline_alerts(local.slack)
    assert missed, [r["body"].get("text") for r in local.slack.requests][-3:]
    assert "not finished within 1 s of being queued" in missed[0]
    logs = local.af.logs()
    assert WEBHOOK_SECRET not in logs and PG_PASSWORD not in logs


def _deadline_alerts(slack: RecordingServer) -> list[str]:
    """The texts of the approval DAG's "not finished" alerts the loopback Slack received."""
    texts = [str(r["body"].get("text", "")) for r in list(slack.requests)]
    return [t for t in texts if APPROVAL_DAG in t and "not finished" in t]


def _approval_steps(
    af: Deployment, config: Path, golden: Path, corpus: Path, store_url: str, folder: Path
) -> None:
    """``approve_baseline`` in the running deployment (the demo set's DAG): a run under changed
    labels ends, its approval waits in ``awaiting_input`` in the approval DAG, is approved
    through REST API v2 and the run is then the store's baseline; a regression under the same
    labels fails its DAG run at once (``fail_on_regression``), asks too, is rejected, and the
    approved run stays the baseline."""
    from retrieval_eval.store import open_store
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

    started = time.monotonic()
    labels = folder / "handbook.yaml"
    labels.write_text(_approval_set(folder).read_text())
    approval: dict[str, Any] = {"set": labels}
    _write_config(config, golden, corpus, approval)
    # the baseline under the old labels, recorded in this process as `retrieval-eval run` does
    job = LabelledRunJob(config_path=str(config), set=APPROVAL, retriever="handbook")
    seed = run_in_process(LabelledRun(job, store_url=lambda: store_url))
    old, seeded = seed.run_id, seed.result.model_dump(mode="json")
    data = yaml.safe_load(labels.read_text())
    data["questions"][0]["expected_document_ids"].append("billing/invoices.md")
    labels.write_text(yaml.safe_dump(data))

    # 6. changed labels: the run is saved, not the baseline; the evaluation's DAG run ends and
    #    the approval DAG's run, started by its request, waits for a person
    run = af.trigger(APPROVAL_DAG, "relabelled")
    assert af.wait(APPROVAL_DAG, run) == "success"
    tis = af.task_instances(APPROVAL_DAG, run)
    assert tis["request_approval"]["state"] == "success"
    assert tis["no_regression"]["state"] == "success"
    asking = af.wait_for_triggered(ASKING_DAG, set())
    af.wait_for_task(ASKING_DAG, asking, "approve_baseline", "awaiting_input")
    (waiting,) = _rows(store_url, f"airflow:{APPROVAL_DAG}:{run}")
    assert waiting.verdict is not None and waiting.verdict.needs_approval
    fingerprint = waiting.result.labels_fingerprint
    assert fingerprint != seeded["labels_fingerprint"]
    with open_store(store_url) as store:
        assert store.find_baseline(APPROVAL, "handbook", fingerprint) is None
    request = af.hitl(ASKING_DAG, asking, "approve_baseline")
    assert (
        request["subject"] == f"Accept run {waiting.id} as the baseline of {APPROVAL} × handbook?"
    )
    assert request["options"] == ["Approve", "Reject"] and request["defaults"] == ["Reject"]
    body = request["body"]
    assert "labels changed" in body and f"Current baseline: run {old}: top-1 " in body
    assert f"- Run page: http://airflow.example/retrieval-eval/runs/{waiting.id}" in body
    assert PG_PASSWORD not in body
    assert not any(q["question"] in body for q in data["questions"])
    af.respond(ASKING_DAG, asking, "approve_baseline", "Approve")
    assert af.wait(ASKING_DAG, asking) == "success"
    tis = af.task_instances(ASKING_DAG, asking)
    assert tis["accept_baseline"]["state"] == "success"
    with open_store(store_url) as store:
        accepted = store.find_baseline(APPROVAL, "handbook", fingerprint)
    assert accepted is not None and accepted.id == waiting.id and accepted.accepted_baseline

    # 7. a regression under those labels (fail_on_regression): the evaluation's DAG run fails
    #    at once, while its approval asks in the approval DAG; Reject: the approved run stays
    _write_config(config, golden, corpus, {**approval, "lexical": {"min_score": 1e9}})
    run = af.trigger(APPROVAL_DAG, "regressed")
    assert af.wait(APPROVAL_DAG, run) == "failed"
    tis = af.task_instances(APPROVAL_DAG, run)
    assert tis["alert_regression"]["state"] == "failed"
    assert tis["request_approval"]["state"] == "success"
    asking = af.wait_for_triggered(ASKING_DAG, {asking})
    af.wait_for_task(ASKING_DAG, asking, "approve_baseline", "awaiting_input")
    (regressed,) = _rows(store_url, f"airflow:{APPROVAL_DAG}:{run}")
    assert (
        f"Accept run {regressed.id} " in af.hitl(ASKING_DAG, asking, "approve_baseline")["subject"]
    )
    answer = af.respond(ASKING_DAG, asking, "approve_baseline", "Reject")
    assert answer["responded_by"]["name"] == "admin"
    assert af.wait(ASKING_DAG, asking) == "success"
    tis = af.task_instances(ASKING_DAG, asking)
    assert tis["approve_baseline"]["state"] == "success"
    assert tis["accept_baseline"]["state"] == "skipped"
    assert regressed.verdict_state == "regression" and not regressed.accepted_baseline
    with open_store(store_url) as store:
        kept = store.find_baseline(APPROVAL, "handbook", fingerprint)
    assert kept is not None and kept.id == waiting.id
    print(f"approve_baseline steps took {time.monotonic() - started:.1f} s")

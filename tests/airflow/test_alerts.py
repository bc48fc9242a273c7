"""Alert messages and senders against a real HTTP server on 127.0.0.1 (Slack stands in)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from slack_server import RecordingServer
from store.builders import make_run, question

from retrieval_eval.airflow.alerts import build_message, send_alerts, sender_for
from retrieval_eval.airflow.alerts.webhook import webhook_url
from retrieval_eval.evaluation.labels import DeadLabels
from retrieval_eval.reports.verdict import regression_reasons
from retrieval_eval.verdicts.regression import SliceRegression, Verdict
from retrieval_eval.workflows.recording import Recorded

pytestmark = pytest.mark.airflow

RESULT = make_run(
    [question(f"q{i:02d}", i < 20, i < 30) for i in range(40)],  # top-1 50 %, top-3 75 %
    set_identifier="handbook.demo",
    retriever="bm25",
)
RECORDED = Recorded(
    run_id=12,
    saved=True,
    verdict=Verdict(
        state="regression",
        baseline_run_id=9,
        top1_delta=-0.25,
        top3_delta=-0.125,
        is_regression=True,
        slice_regressions=[
            SliceRegression(
                dimension="form", value="gap", metric="top1", baseline=0.6, current=0.3, delta=-0.3
            ),
        ],
        flipped_to_miss=[f"q{i}" for i in range(8)],
        summary="top-1 dropped 25.0 points",
    ),
)


def test_regression_message_has_before_after_slices_flips_and_link() -> None:
    message = build_message("regression", RESULT, RECORDED, "https://airflow.example/re/")
    text = message.text()
    assert text.splitlines()[0] == "Retrieval regression: handbook.demo × bm25"
    assert "Top-1: 75.0% → 50.0%" in text
    assert "Top-3: 87.5% → 75.0%" in text
    assert "Slice form=gap top1: 60.0% → 30.0%" in text
    assert "Now missed at top-1: q0, q1, q2, q3, q4 (+3 more)" in text
    assert "Run 12 (baseline run 9): https://airflow.example/re/runs/12" in text


def test_a_regression_whose_overall_rate_rose_says_first_what_regressed() -> None:
    """The deployment's alert read ``Top-1: 46.4% → 50.0%`` on a "regression": a slice fell.
    The first line after the title now names the figure that regressed."""
    from store.builders import as_stored

    from retrieval_eval.config.models import Thresholds
    from retrieval_eval.verdicts.regression import detect_regression

    before = [question(f"m{i:02d}", True, form="match") for i in range(20)]
    before += [question(f"g{i:02d}", False, form="gap") for i in range(24)]
    after = [question(f"m{i:02d}", i < 8, form="match") for i in range(20)]  # -60 pts
    after += [question(f"g{i:02d}", i < 14, form="gap") for i in range(24)]  # top-1 rises
    verdict = detect_regression(make_run(after, day=1), as_stored(make_run(before)), Thresholds())
    assert verdict.state == "regression" and verdict.top1_delta is not None
    assert verdict.top1_delta > 0
    recorded = Recorded(run_id=5, saved=True, verdict=verdict)
    message = build_message("regression", make_run(after, day=1), recorded)
    lines = message.text().splitlines()
    assert lines[1] == (
        "Regressed: 2 slice regressions (form=match top1 -60.0 pts, form=match top3 -60.0 pts)"
    )
    assert lines[2] == "Top-1: 45.5% → 50.0%"
    assert "Slice form=match top1: 100.0% → 40.0% (-60.0 pts)" in lines
    assert message.model_dump(mode="json")["reasons"] == regression_reasons(verdict)


def test_invalid_run_message_does_not_call_it_a_regression() -> None:
    result = make_run([question(f"q{i}", False, error="boom") for i in range(40)])
    recorded = Recorded(run_id=3, saved=True, verdict=Verdict(state="invalid_run"))
    text = build_message("invalid_run", result, recorded).text()
    assert "could not be trusted" in text
    assert "40 of 40 questions failed" in text
    assert "regression" not in text.lower()


def test_slack_sender_posts_text_and_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer() as server:
        monkeypatch.setenv(
            "AIRFLOW_CONN_SLACK_T",
            json.dumps(
                {
                    "conn_type": "slackwebhook",
                    "host": f"http://127.0.0.1:{server.port}",
                    "password": "T1/B2/secretpart",
                }
            ),
        )
        sent = send_alerts(
            [{"type": "slack", "connection_id": "slack_t"}],
            build_message("regression", RESULT, RECORDED),
        )
    assert sent == "sent: slack:slack_t"
    (request,) = server.requests
    assert request["path"] == "/T1/B2/secretpart"
    assert "Top-1: 75.0% → 50.0%" in request["body"]["text"]
    assert request["body"]["blocks"][0]["text"]["text"].startswith("Retrieval regression")


def test_webhook_sender_posts_json_with_bearer_token(monkeypatch: pytest.MonkeyPatch) -> None:
    with RecordingServer() as server:
        monkeypatch.setenv(
            "AIRFLOW_CONN_HOOK_T",
            json.dumps(
                {
                    "conn_type": "http",
                    "host": f"http://127.0.0.1:{server.port}/alerts",
                    "password": "tok-123456",
                }
            ),
        )
        send_alerts(
            [{"type": "webhook", "connection_id": "hook_t"}],
            build_message("regression", RESULT, RECORDED),
        )
    (request,) = server.requests
    assert request["path"] == "/alerts"
    assert request["headers"]["Authorization"] == "Bearer tok-123456"
    body = request["body"]
    assert body["kind"] == "regression" and body["run_id"] == 12
    assert body["top1_before"] == pytest.approx(0.75) and body["top1_after"] == 0.5


@pytest.mark.parametrize("kind", ["slack", "webhook"])
def test_a_proxy_carries_the_alert(monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The Slack connection's ``proxy`` extra, else ``$http_proxy`` (as urllib reads it): the
    request reaches the proxy (a real server on 127.0.0.1) for the webhook's own host."""
    with RecordingServer() as proxy:
        proxy_url = f"http://127.0.0.1:{proxy.port}"
        connection: dict[str, Any] = {"host": "http://hooks.invalid/alerts", "password": "T1/B2/p"}
        if kind == "slack":
            connection |= {"conn_type": "slackwebhook", "extra": {"proxy": proxy_url}}
        else:
            connection |= {"conn_type": "http"}
            monkeypatch.setenv("http_proxy", proxy_url)
            monkeypatch.delenv("no_proxy", raising=False)
        monkeypatch.setenv(f"AIRFLOW_CONN_{kind.upper()}_P", json.dumps(connection))
        specs = [{"type": kind, "connection_id": f"{kind}_p"}]
        assert send_alerts(specs, build_message("regression", RESULT, RECORDED)) == (
            f"sent: {kind}:{kind}_p"
        )
    (request,) = proxy.requests
    assert request["path"].startswith("http://hooks.invalid/alerts")
    assert request["body"]["text"].startswith("Retrieval regression")


def test_failures_name_the_connection_not_the_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    # nothing listens on port 9: the error must not echo the webhook URL or token
    monkeypatch.setenv(
        "AIRFLOW_CONN_DEAD",
        json.dumps(
            {
                "conn_type": "slackwebhook",
                "host": "http://127.0.0.1:9",
                "password": "T9/B9/verysecret",
            }
        ),
    )
    with pytest.raises(RuntimeError) as info:
        send_alerts(
            [{"type": "slack", "connection_id": "dead"}],
            build_message("regression", RESULT, RECORDED),
        )
    assert "'dead'" in str(info.value)
    assert "verysecret" not in str(info.value) and "127.0.0.1:9" not in str(info.value)


def test_unknown_alert_type_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="available: slack, webhook"):
        sender_for({"type": "pager"})


def test_webhook_url_adds_port_and_scheme() -> None:
    class C:
        host, port, schema = "hooks.example.com/x", 8443, "https"

    assert webhook_url(C()) == "https://hooks.example.com:8443/x"


def test_a_run_alerts_once_per_channel_across_retries(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A retried or re-run alert task finds the store's marker and sends nothing twice; a
    failed send releases its marker so the retry does send."""
    from retrieval_eval.store import open_store

    specs = [{"type": "slack", "connection_id": "slack_t"}]
    message = build_message("regression", RESULT, RECORDED)
    with RecordingServer() as server, open_store(f"sqlite:///{tmp_path / 'r.sqlite'}") as store:
        slack = {"conn_type": "slackwebhook", "password": "T1/B2/secretpart"}
        # first try: the channel is down
        monkeypatch.setenv(
            "AIRFLOW_CONN_SLACK_T", json.dumps({**slack, "host": "http://127.0.0.1:9"})
        )
        with pytest.raises(RuntimeError):
            send_alerts(specs, message, store=store, run_key="airflow:d:r1")
        assert store.alerts.state("airflow:d:r1", "slack:slack_t") is None
        # the retry reaches it; later tries and re-runs are skipped
        monkeypatch.setenv(
            "AIRFLOW_CONN_SLACK_T",
            json.dumps({**slack, "host": f"http://127.0.0.1:{server.port}"}),
        )
        assert send_alerts(specs, message, store=store, run_key="airflow:d:r1") == (
            "sent: slack:slack_t"
        )
        again = send_alerts(specs, message, store=store, run_key="airflow:d:r1")
        assert again == "skipped: slack:slack_t (already sent; not sent twice)"
        assert len(server.requests) == 1
        # another DAG run alerts on its own
        send_alerts(specs, message, store=store, run_key="airflow:d:r2")
        assert len(server.requests) == 2


LABELS_RESULT = RESULT.model_copy(
    update={
        "dead_labels": DeadLabels(
            checked=True,
            source="corpus",
            dead_ids=["a.md", "b.md"],
            stale_questions=["q1"],
            partly_dead={"q2": ["b.md"]},
        ),
        "lint": {"mode": "warn", "errors": 2, "warnings": 1, "findings": []},
    }
)
LABELS_RECORDED = Recorded(
    run_id=14,
    saved=True,
    verdict=Verdict(
        state="no_regression",
        baseline_run_id=9,
        dead_ids=["a.md", "b.md"],
        stale_questions=["q1"],
        summary="No regression against run 9 ...",
    ),
)


def test_labels_message_is_its_own_kind_not_a_regression() -> None:
    message = build_message("labels", LABELS_RESULT, LABELS_RECORDED, "https://airflow.example")
    text = message.text()
    assert text.splitlines()[0] == "Retrieval eval labels need attention: handbook.demo × bm25"
    assert "Labels need attention: 2 ids no longer in the index (corpus): a.md, b.md" in text
    assert (
        "1 question with no target left (stale labels, left out of the regression verdict): q1"
        in text
    )
    assert "1 more lost some of their targets" in text
    assert "Lint: 2 errors, 1 warnings" in text
    assert "Top-1" not in text and "No regression against" not in text
    assert "Run 14 (baseline run 9): https://airflow.example/runs/14" in text


def test_a_labels_alert_and_a_regression_alert_are_each_sent_once(tmp_path: Path) -> None:
    """Separate kinds: the labels marker never blocks the verdict's alert, nor the reverse."""
    from retrieval_eval.store import open_store

    specs = [{"type": "slack", "connection_id": "slack_l"}]
    regression = build_message("regression", RESULT, RECORDED)
    labels = build_message("labels", LABELS_RESULT, LABELS_RECORDED)
    key = "airflow:d:labels"
    with RecordingServer() as server, open_store(f"sqlite:///{tmp_path / 'r.sqlite'}") as store:
        conn = {
            "conn_type": "slackwebhook",
            "password": "T1/B2/lbl",
            "host": f"http://127.0.0.1:{server.port}",
        }
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("AIRFLOW_CONN_SLACK_L", json.dumps(conn))
            assert send_alerts(specs, labels, store=store, run_key=key) == (
                "sent: slack:slack_l#labels"
            )
            assert send_alerts(specs, regression, store=store, run_key=key) == "sent: slack:slack_l"
            assert "skipped" in send_alerts(specs, labels, store=store, run_key=key)
            assert "skipped" in send_alerts(specs, regression, store=store, run_key=key)
        assert len(server.requests) == 2
        assert store.alerts.state(key, "slack:slack_l#labels") == "sent"


def test_regression_alert_with_stale_labels_reads_over_the_compared_questions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo handbook, baseline on the full corpus, then a worse build of a copy missing two
    target documents (QA's case): the questions left stale are out of the verdict, so the alert's before → after
    must be the verdict's rates over the questions compared (as the CLI headline prints them),
    not the overall rate minus a delta over fewer questions, with the overall rate beside."""
    from click.testing import CliRunner

    from retrieval_eval.airflow.alerts.slack import SlackAlertSender
    from retrieval_eval.airflow.alerts.webhook import WebhookAlertSender
    from retrieval_eval.cli import cli
    from retrieval_eval.formats.numbers import pct
    from retrieval_eval.reports.headline import compared_count, judged_rates
    from retrieval_eval.store import open_store

    examples = Path(__file__).resolve().parents[2] / "examples"
    for part in ("corpus", "golden", "retrieval_eval.yaml"):
        copy = shutil.copytree if (examples / part).is_dir() else shutil.copy
        copy(examples / part, tmp_path / part)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    url = "sqlite:///s.sqlite"
    args = ["run", "handbook.demo", "handbook_bm25", "--db", url, "--config", "retrieval_eval.yaml"]
    assert CliRunner().invoke(cli, args).exit_code == 0  # the baseline
    for gone in ("api/rate-limits-legacy-v1.md", "support/contact.md"):
        (tmp_path / "corpus" / gone).unlink()
    # and a worse index build (15-word chunks, no overlap), so the compared questions regress
    config = tmp_path / "retrieval_eval.yaml"
    text = config.read_text("utf-8")
    assert "chunk_size: 120" in text and "chunk_overlap: 20" in text
    text = text.replace("chunk_size: 120", "chunk_size: 15")
    config.write_text(text.replace("chunk_overlap: 20", "chunk_overlap: 0"), "utf-8")
    assert CliRunner().invoke(cli, args).exit_code == 0
    with open_store(url) as store:
        (stored,) = store.latest_runs()
    result, verdict = stored.result, stored.verdict
    assert verdict is not None and verdict.state == "regression" and verdict.stale_questions
    n = compared_count(verdict)
    assert n is not None and n < result.question_count

    message = build_message(
        "regression", result, Recorded(run_id=stored.id, saved=True, verdict=verdict)
    )
    lines = message.lines()
    for label, key in (("Top-1", "top1"), ("Top-3", "top3")):
        overall = pct(getattr(result, f"{key}_hit_rate"))
        expected = (
            f"{label}: {judged_rates(verdict, key)} "
            f"(this run: {overall} over all {result.question_count})"
        )
        assert expected in lines, lines
    slack_text = SlackAlertSender().blocks(message)[1]["text"]["text"]
    assert f"on the {n} questions compared" in slack_text
    payload = WebhookAlertSender().payload(message)
    assert payload["compared_questions"] == n
    for key in ("top1", "top3"):
        before, after = payload[f"{key}_before"], payload[f"{key}_after"]
        assert (before, after) == (
            getattr(verdict, f"{key}_baseline"),
            getattr(verdict, f"{key}_current"),
        )
        # both sides over the same questions: their difference is the verdict's delta
        assert after - before == pytest.approx(getattr(verdict, f"{key}_delta"))
        assert payload[f"{key}_overall"] == getattr(result, f"{key}_hit_rate")


def test_without_stale_questions_the_alert_has_no_compared_note() -> None:
    text = build_message("regression", RESULT, RECORDED).text()
    assert "questions compared" not in text and "this run:" not in text


def test_a_run_stored_with_the_old_internal_source_name_never_shows_it() -> None:
    """Runs stored before the dead-label check named its source carry the placeholder "index";
    the alert and the check's line say "reported by the retriever" instead."""
    labels = LABELS_RESULT.dead_labels
    assert labels is not None
    old = LABELS_RESULT.model_copy(
        update={"dead_labels": labels.model_copy(update={"source": "index"})}
    )
    text = build_message("labels", old, LABELS_RECORDED, None).text()
    assert "no longer in the index (reported by the retriever): a.md, b.md" in text
    assert "(index)" not in text
    assert old.dead_labels is not None and "(index)" not in old.dead_labels.summary()
    assert old.dead_labels.summary().endswith("1 partly dead; reported by the retriever)")


def _slack_conn(server: RecordingServer, name: str) -> str:
    """A Slack connection to ``server``: its webhook path (a secret) ``/T0/B0/secret-<name>``."""
    return json.dumps(
        {
            "conn_type": "slackwebhook",
            "password": f"T0/B0/secret-{name}",
            "host": f"http://127.0.0.1:{server.port}",
        }
    )


def test_channels_get_only_the_kinds_they_route_with_their_mention(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Severity routing: the on-call channel gets the verdict's alerts with its mention first,
    the team channel the labels; a channel without ``kinds`` (an old config) gets all."""
    from retrieval_eval.config.models import AlertSpec

    specs = [
        AlertSpec.model_validate(spec).model_dump(exclude_none=True)
        for spec in (
            {
                "connection_id": "oncall",
                "kinds": ["regression", "invalid_run"],
                "mention": "<!subteam^S0123>",
            },
            {"connection_id": "team", "kinds": ["labels", "drift"]},
            {"connection_id": "all"},
        )
    ]
    with RecordingServer() as server:
        for name in ("oncall", "team", "all"):
            monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", _slack_conn(server, name))
        regression = send_alerts(specs, build_message("regression", RESULT, RECORDED))
        labels = send_alerts(specs, build_message("labels", LABELS_RESULT, LABELS_RECORDED))
    assert regression == "sent: slack:oncall, slack:all"
    assert labels == "sent: slack:team#labels, slack:all#labels"
    by_path = [(r["path"], r["body"]["text"].splitlines()) for r in server.requests]
    assert [path.rsplit("-", 1)[1] for path, _ in by_path] == ["oncall", "all", "team", "all"]
    oncall_lines = by_path[0][1]
    assert oncall_lines[:2] == ["Retrieval regression: handbook.demo × bm25", "<!subteam^S0123>"]
    assert server.requests[0]["body"]["blocks"][1]["text"]["text"].startswith("<!subteam^S0123>")
    assert all("<!subteam" not in "\n".join(lines) for _, lines in by_path[1:])


def test_an_unknown_alert_kind_is_refused_naming_the_known_ones() -> None:
    from pydantic import ValidationError

    from retrieval_eval.config.models import AlertSpec

    with pytest.raises(ValidationError) as caught:
        AlertSpec.model_validate({"kinds": ["regresion"]})
    assert "kinds.0" in str(caught.value) and "'regression'" in str(caught.value)


PASSED = Recorded(  # RECORDED's run passing instead: top-1 up 5 points
    run_id=13,
    saved=True,
    verdict=RECORDED.verdict.model_copy(
        update={
            "state": "no_regression",
            "top1_delta": 0.05,
            "top3_delta": 0.0,
            "is_regression": False,
            "slice_regressions": [],
            "flipped_to_miss": [],
            "summary": "No regression against 9",
        }
    ),
)


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_recovery_is_sent_once_after_an_alerted_regression_per_channel(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, request: pytest.FixtureRequest, backend: str
) -> None:
    """regression (alerted) → pass: one "Recovered" on each channel that had the regression,
    none on a channel that routes no regressions, none again on a retry or the next pass; a
    later regression opens it again. Another retriever's regression never closes this one.
    On both stores (the markers are read with a join on the run key)."""
    import contextlib

    from store.builders import pg_schema

    from retrieval_eval.store import open_store

    specs = [
        {"type": "slack", "connection_id": "oncall", "kinds": ["regression"]},
        {"type": "slack", "connection_id": "team", "kinds": ["labels"]},
    ]
    runs = {key: RESULT.model_copy(update={"run_key": key}) for key in ("r1", "r2", "r3", "r4")}
    other = RESULT.model_copy(update={"run_key": "o1", "retriever": "dense"})

    def send(kind: str, key: str) -> str:
        recorded = RECORDED if kind == "regression" else PASSED
        result = other if key == "o1" else runs[key]
        return send_alerts(
            specs, build_message(kind, result, recorded), store=store, run_key=result.run_key
        )

    with contextlib.ExitStack() as stack:
        url = f"sqlite:///{tmp_path / 'r.sqlite'}"
        if backend == "postgresql":
            url = stack.enter_context(pg_schema(request.getfixturevalue("pg_url")))
        server = stack.enter_context(RecordingServer())
        store = stack.enter_context(open_store(url))
        for name in ("oncall", "team"):
            monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", _slack_conn(server, name))
        for result in [*runs.values(), other]:
            store.runs.save(result)
        assert send("recovered", "r1") == "no alert channel to send a recovered alert to"
        assert send("regression", "r1") == "sent: slack:oncall"
        assert send("regression", "o1") == "sent: slack:oncall"
        assert send("recovered", "r2") == "sent: slack:oncall"
        assert "skipped" in send("recovered", "r2")  # a retry of the same run
        assert send("recovered", "r3") == "no alert channel to send a recovered alert to"
        assert send("regression", "r3") == "sent: slack:oncall"
        assert send("recovered", "r4") == "sent: slack:oncall"
    titles = [r["body"]["text"].splitlines()[0] for r in server.requests]
    assert titles == [
        "Retrieval regression: handbook.demo × bm25",
        "Retrieval regression: handbook.demo × dense",
        "Retrieval recovered: handbook.demo × bm25",
        "Retrieval regression: handbook.demo × bm25",
        "Retrieval recovered: handbook.demo × bm25",
    ]
    recovered = server.requests[2]["body"]["text"]
    assert "Recovered: no regression, after the regression alerted earlier." in recovered
    assert "Top-1: 45.0% → 50.0%" in recovered and "Run 13 (baseline run 9)" in recovered
    assert {r["path"] for r in server.requests} == {"/T0/B0/secret-oncall"}

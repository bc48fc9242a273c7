"""The redaction policy, and the leak matrix: every secret source × echo form × sink.

The policy (:mod:`retrieval_eval.safety.redaction`) is checked directly first. Then the matrix: a real
search service on 127.0.0.1 (tests/servers/ranking_server.py) answers 500 quoting a credential
in one of its echo forms, and the secret must appear nowhere the run's error text goes:

- sources: a header from the environment (``Bearer``), a header from an Airflow connection
  (``Bearer``), a Basic-auth connection (login and password), a store URL's password;
- forms: see :func:`servers.ranking_server.echo_forms` (verbatim, without its scheme,
  JSON-escaped, URL-encoded twice over, embedded in a long page; decoded ``user:password``, the
  password alone and their base64 where there is a pair);
- sinks: stdout and stderr of ``retrieval-eval run`` for each report format, the logs, the spool
  file (the store is unreachable), the store's rows (PostgreSQL: ``eval_result_question`` and
  ``eval_result`` whole, details JSON included), the Airflow alert task's log (the plain steps
  and the alert task's body) and the Slack payload.

Each (source, form) cell runs the CLI in-process three times against an unreachable store and
once against PostgreSQL, then the Airflow steps; every sink of the cell is checked on its own.
One real subprocess checks the CLI's real stderr, where Python's logging writes retry warnings.
"""

from __future__ import annotations

import base64
import contextlib
import html
import importlib.util
import io
import json
import logging
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from helpers import ROOT
from servers.ranking_server import RankingServer, echo_body, echo_forms
from sqlalchemy.engine import make_url

from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.safety.redaction import (
    BODY_QUOTE_CHARS,
    MASK,
    MIN_SECRET_CHARS,
    RedactingFilter,
    forget_all,
    quote_body,
    redact,
    register_credentials,
    register_header,
    register_secret,
    register_url,
    register_webhook,
)
from retrieval_eval.store.url import mask_url

TOKEN = 'tok"9f/x+y=z%k-7f3a9c1e-very-secret'
CONN_TOKEN = 'ctk"5b/q+r=s%m-2c8e4f6a-conn-secret'
BASIC_USER, BASIC_PASSWORD = "svc-user", 'pw"8c2d/e+f=Q%b-6e1f0a9d-basic-secret'
STORE_USER, STORE_PASSWORD = "postgres", "SECRETPW-4d2e9a"  # the test server trusts postgres
SLACK_PATH = "T0001/B0002/slackpart-5e7a1c9b"
UNREACHABLE = f"postgresql://{STORE_USER}:{STORE_PASSWORD}@127.0.0.1:1/x"  # nothing listens


@pytest.fixture(autouse=True)
def fresh_registry() -> Iterator[None]:
    """Each test starts as a fresh process would: no secret known until the tool reads it."""
    forget_all()
    yield
    forget_all()


def basic(login: str, password: str) -> str:
    return "Basic " + base64.b64encode(f"{login}:{password}".encode()).decode()


# -- the policy --------------------------------------------------------------------------------


def every_form(value: str) -> dict[str, str]:
    """The echo forms plus the rarer encodings the policy also knows."""
    forms = echo_forms(value)
    bare = value.split(" ", 1)[-1]
    forms["json_twice"] = json.dumps(json.dumps(value)[1:-1])[1:-1]
    forms["json_no_scheme"] = json.dumps(bare)[1:-1]
    forms["url_lowercase_hex"] = re.sub(r"%[0-9A-F]{2}", lambda m: m[0].lower(), forms["url"])
    forms["html"] = html.escape(value)
    if "base64" in forms:
        forms["base64_urlsafe_unpadded"] = (
            base64.urlsafe_b64encode(forms["decoded"].encode()).decode().rstrip("=")
        )
    return forms


HEADERS = {
    "bearer": f"Bearer {TOKEN}",
    "basic": basic(BASIC_USER, BASIC_PASSWORD),
    "bare_key": "key-0b5e8d-" + TOKEN,
}


@pytest.mark.parametrize(
    ("header", "form"),
    [(name, form) for name, value in HEADERS.items() for form in every_form(value)],
)
def test_a_header_value_is_masked_in_each_part_and_encoding(header: str, form: str) -> None:
    value = HEADERS[header]
    echoed = every_form(value)[form]
    register_header(value)
    text = redact(f"HTTP 500: upstream said <{echoed}> and gave up")
    assert MASK in text
    assert text.startswith("HTTP 500: upstream said <") and text.endswith("> and gave up")
    for secret in (TOKEN, BASIC_PASSWORD, "7f3a9c1e", "6e1f0a9d", echoed):
        assert secret not in text


def test_values_shorter_than_six_characters_are_not_registered() -> None:
    assert MIN_SECRET_CHARS == 6
    register_secret("abc12")
    register_credentials("user", "pw")  # "pw" alone: too short; "user:pw" is not
    register_header("Bearer abc")  # the whole value is long enough, the token is not
    assert redact("abc12 pw abc") == "abc12 pw abc"
    assert redact("user:pw") == MASK
    assert redact(base64.b64encode(b"user:pw").decode()) == MASK
    assert redact("Authorization: Bearer abc") == f"Authorization: {MASK}"


def test_url_passwords_and_secret_query_values() -> None:
    register_url(
        "postgresql://eval:p%40ss-w0rd@db:5432/r?sslmode=require&api_key=k3y-123456&options=-cx"
    )
    for secret in ("p%40ss-w0rd", "p@ss-w0rd", "eval:p@ss-w0rd", "k3y-123456"):
        assert redact(f"<{secret}>") == f"<{MASK}>", secret
    assert redact(base64.b64encode(b"eval:p@ss-w0rd").decode()) == MASK
    assert redact("sslmode=require options=-cx") == "sslmode=require options=-cx"
    register_url("not a url at all ::: [")  # never raises


def test_masked_urls_hide_secret_query_values_too() -> None:
    url = "postgresql://eval:s3cr3t@db:5432/r?password=pw-123456&sslmode=require"
    assert mask_url(url) == "postgresql://eval:***@db:5432/r?password=***&sslmode=require"
    broken = "postgresql://eval:s3cr3t@db:port/r?sslpassword=pw-123456&sslmode=require"
    assert mask_url(broken) == "postgresql://eval:***@db:port/r?sslpassword=***&sslmode=require"


def test_webhook_path_whole_and_its_token() -> None:
    register_webhook(SLACK_PATH)
    register_webhook("https://hooks.slack.com/services/T9/B9/urlpart-7d6c5b")
    assert redact(f"POST /{SLACK_PATH}") == f"POST /{MASK}"
    assert redact("token slackpart-5e7a1c9b leaked") == f"token {MASK} leaked"
    assert redact("at /services/T9/B9/urlpart-7d6c5b") == f"at /{MASK}"
    assert redact("T0001 and B0002 are ids") == "T0001 and B0002 are ids"


def test_a_secret_holding_another_is_masked_whole() -> None:
    register_secret("abcdef-123")
    register_secret("abcdef-123-and-more")
    assert redact("[abcdef-123-and-more] [abcdef-123]") == f"[{MASK}] [{MASK}]"


def test_nothing_registered_changes_nothing() -> None:
    assert redact(f"{TOKEN} as is") == f"{TOKEN} as is"


@pytest.mark.parametrize("offset", [0, 150, BODY_QUOTE_CHARS - 10, BODY_QUOTE_CHARS + 5])
def test_a_quoted_body_is_masked_before_it_is_cut(offset: int) -> None:
    register_header(f"Bearer {TOKEN}")
    body = "x" * offset + TOKEN + "\n\n  " + "y" * 500
    quoted = quote_body(body)
    assert len(quoted) <= BODY_QUOTE_CHARS and quoted.endswith("…")
    assert TOKEN[:6] not in quoted  # not even the start of it, where the cut falls inside
    if offset < BODY_QUOTE_CHARS - len(MASK):
        assert MASK in quoted


def test_a_secret_with_inner_whitespace_is_masked_before_spaces_collapse() -> None:
    register_secret("multi  space\tsecret-1")
    assert quote_body("[multi  space\tsecret-1]") == f"[{MASK}]"


def test_the_scorer_redacts_the_errors_of_any_adapter() -> None:
    register_header(f"Bearer {TOKEN}")

    class Leaky:
        identifier = "leaky"

        def retrieve(self, question: str, limit: int) -> list[str]:
            raise RuntimeError(f"denied: {json.dumps({'auth': TOKEN})}")

    golden = GoldenQuestionSet(
        identifier="leak.any",
        questions=[GoldenQuestion(id="q", question="q?", form="gap", expected_document_ids=[])],
    )
    error = evaluate(golden, Leaky()).questions[0].error
    assert error == f'RuntimeError: denied: {{"auth": "{MASK}"}}'


def test_library_log_records_are_redacted_by_the_filter(
    caplog: pytest.LogCaptureFixture,
) -> None:
    register_url("https://search.internal/s?api_key=k3y-987654")
    logger = logging.getLogger("retrieval_eval.test_redaction")
    logger.addFilter(RedactingFilter())
    with caplog.at_level(logging.DEBUG, logger=logger.name):
        logger.debug('"GET /s?q=x&api_key=%s HTTP/1.1" 500', "k3y-987654")
    assert "k3y-987654" not in caplog.text and f"api_key={MASK}" in caplog.text


def load_slack_server() -> Any:
    """tests/airflow/slack_server.py (that folder is not a package and may not be on sys.path)."""
    if "slack_server" in sys.modules:
        return sys.modules["slack_server"]
    path = ROOT / "tests" / "airflow" / "slack_server.py"
    spec = importlib.util.spec_from_file_location("slack_server", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_alert_senders_register_their_channel_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("airflow.providers.slack")
    from store.builders import make_run, question

    from retrieval_eval.airflow.alerts import build_message, send_alerts
    from retrieval_eval.verdicts.regression import Verdict
    from retrieval_eval.workflows.recording import Recorded

    message = build_message(
        "invalid_run",
        make_run([question("q1", False, error="boom")], set_identifier="s", retriever="r"),
        Recorded(
            run_id=1, saved=True, verdict=Verdict(state="invalid_run", summary=f"see {SLACK_PATH}")
        ),
    )
    hook_token = "hook-tok-8a7b6c5d"
    with load_slack_server().RecordingServer() as server:
        base = f"http://127.0.0.1:{server.port}"
        monkeypatch.setenv(
            "AIRFLOW_CONN_SLACK_REDACT",
            json.dumps({"conn_type": "slackwebhook", "host": base, "password": SLACK_PATH}),
        )
        monkeypatch.setenv(
            "AIRFLOW_CONN_HOOK_REDACT",
            json.dumps({"conn_type": "http", "host": base + "/alerts", "password": hook_token}),
        )
        send_alerts(
            [
                {"type": "slack", "connection_id": "slack_redact"},
                {"type": "webhook", "connection_id": "hook_redact"},
            ],
            message,
        )
    slack, hook = server.requests
    assert slack["path"] == f"/{SLACK_PATH}"  # sent where it belongs...
    assert hook["headers"]["Authorization"] == f"Bearer {hook_token}"
    # ...and known to the policy from then on
    for secret in (SLACK_PATH, "slackpart-5e7a1c9b", hook_token, f"Bearer {hook_token}"):
        assert redact(f"<{secret}>") == f"<{MASK}>"
    assert SLACK_PATH not in json.dumps([slack["body"], hook["body"]])
    assert message.summary == f"see {SLACK_PATH}"  # built before the path was known...
    assert SLACK_PATH not in message.text()  # ...but every line is redacted when shown


# -- the matrix --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Source:
    """Where a secret comes from and the credential value the service echoes."""

    name: str
    value: str  # a header, or user:password for the store
    cores: tuple[str, ...]  # fragments that must not survive either (a cut must not reveal them)

    @property
    def needles(self) -> set[str]:
        forms = echo_forms(self.value).values()
        return {n for n in [*forms, *self.cores] if len(n) >= MIN_SECRET_CHARS}


SOURCES = {
    s.name: s
    for s in [
        Source("env_bearer", f"Bearer {TOKEN}", ("7f3a9c1e", TOKEN)),
        Source("conn_bearer", f"Bearer {CONN_TOKEN}", ("2c8e4f6a", CONN_TOKEN)),
        Source("conn_basic", basic(BASIC_USER, BASIC_PASSWORD), ("6e1f0a9d", BASIC_PASSWORD)),
        Source("store_password", f"{STORE_USER}:{STORE_PASSWORD}", (STORE_PASSWORD,)),
    ]
}
CELLS = [(s.name, form) for s in SOURCES.values() for form in echo_forms(s.value)]
FORMATS = ("json", "markdown", "text")
CLI_SINKS = [
    *(f"{stream}:{fmt}" for fmt in FORMATS for stream in ("stdout", "stderr")),
    "log",
    "spool",
]
STORED_SINKS = ["store", "airflow_log", "slack"]  # a reachable store: PostgreSQL


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


class _ToStderr(logging.Handler):
    """What Python's last-resort handler does for the real CLI: warnings to the current stderr."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)

    def emit(self, record: logging.LogRecord) -> None:
        sys.stderr.write(self.format(record) + "\n")


@contextlib.contextmanager
def captured_logs() -> Iterator[_Collect]:
    root = logging.getLogger()
    collect, to_stderr = _Collect(), _ToStderr()
    loggers = [logging.getLogger(name) for name in ("retrieval_eval", "urllib3", "airflow")]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.DEBUG)
    root.addHandler(collect)
    root.addHandler(to_stderr)
    try:
        yield collect
    finally:
        root.removeHandler(collect)
        root.removeHandler(to_stderr)
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


@dataclass
class Matrix:
    """Runs each (source, form) cell once, lazily; keeps what every sink received."""

    folder: Path
    server: RankingServer
    slack: Any  # slack_server.RecordingServer
    store_url: str | None = None  # PostgreSQL, with STORE_PASSWORD in it
    cli: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    stored: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    def files(self, source: Source, form: str) -> tuple[Path, Path, dict[str, str]]:
        """The cell's config and set, and the environment its secrets come from."""
        cell = self.folder / f"{source.name}-{form}"
        cell.mkdir(exist_ok=True)
        spec: dict[str, Any] = {
            "type": "http",
            "ids": "hits.hits[*]._id",
            "retries": 1,  # one retry warning
            "backoff_s": 0,
        }
        env = {"RETRIEVAL_EVAL_HOME": str(cell / "home")}
        if source.name == "env_bearer":
            spec.update(url=self.server.url + "/s", headers_from_env={"Authorization": "AUTH_R"})
            env["AUTH_R"] = source.value
        elif source.name == "store_password":
            spec["url"] = self.server.url + "/s"
        else:
            host, port = self.server.url.removeprefix("http://").split(":")
            conn: dict[str, Any] = {"conn_type": "http", "host": host, "port": int(port)}
            if source.name == "conn_basic":
                conn.update(login=BASIC_USER, password=BASIC_PASSWORD)
                spec["connection_scheme"] = "Basic"
            else:
                conn["password"] = CONN_TOKEN
            env["AIRFLOW_CONN_SEARCH_R"] = json.dumps(conn)
            spec.update(url="/s", connection_id="search_r")
        config = cell / "cfg.yaml"
        config.write_text(yaml.safe_dump({"retrievers": {"api": spec}}), encoding="utf-8")
        golden = cell / "set.yaml"
        question = {"id": "q", "question": f"ask {form}", "form": "gap"}
        golden.write_text(
            yaml.safe_dump({"identifier": f"leak.{source.name}", "questions": [question]}),
            encoding="utf-8",
        )
        self.server.behaviour.echo = {f"ask {form}": form}
        self.server.behaviour.echo_secret = (
            source.value if source.name == "store_password" else None
        )
        return config, golden, env

    def cli_sinks(self, source: Source, form: str) -> dict[str, str]:
        key = (source.name, form)
        if key in self.cli:
            return self.cli[key]
        forget_all()
        config, golden, env = self.files(source, form)
        out: dict[str, str] = {}
        with pytest.MonkeyPatch.context() as mp, captured_logs() as logs:
            for name, value in env.items():
                mp.setenv(name, value)
            for fmt in FORMATS:
                run = CliRunner().invoke(
                    cli_group(),
                    [*run_args(config, golden, fmt), "--db", UNREACHABLE],
                )
                assert run.exit_code == 3, run.output
                out[f"stdout:{fmt}"], out[f"stderr:{fmt}"] = run.stdout, run.stderr
        out["log"] = "\n".join(logs.lines)
        spool = sorted((Path(env["RETRIEVAL_EVAL_HOME"]) / "spool").glob("*.json"))
        assert len(spool) == len(FORMATS)
        out["spool"] = "\n".join(path.read_text(encoding="utf-8") for path in spool)
        # the echo arrived and was masked, and retried with a warning: the cell is no vacuous pass
        error = json.loads(out["stdout:json"])["questions"][0]["error"]
        assert "HTTP 500" in error and MASK in error, error
        assert "retrying" in out["stderr:text"] and "retrying" in out["log"]
        self.cli[key] = out
        return out

    def stored_sinks(self, source: Source, form: str) -> dict[str, str]:
        key = (source.name, form)
        if key in self.stored:
            return self.stored[key]
        assert self.store_url is not None
        forget_all()
        config, golden, env = self.files(source, form)
        env["AIRFLOW_CONN_SLACK_R"] = json.dumps(
            {
                "conn_type": "slackwebhook",
                "host": f"http://127.0.0.1:{self.slack.port}",
                "password": SLACK_PATH,
            }
        )
        env["RETRIEVAL_EVAL_DB"] = self.store_url  # where the Airflow tasks find the store
        out: dict[str, str] = {}
        sent_before = len(self.slack.requests)
        with pytest.MonkeyPatch.context() as mp, captured_logs() as logs:
            for name, value in env.items():
                mp.setenv(name, value)
            run = CliRunner().invoke(
                cli_group(),
                [*run_args(config, golden, "json"), "--db", self.store_url],
            )
            assert run.exit_code == 3, run.output  # invalid: its one question errored
            out["store"] = self.rows(json.loads(run.stdout)["run_id"])
            task_log = io.StringIO()
            with contextlib.redirect_stdout(task_log):
                run_id = airflow_run(config, golden, f"airflow:leak:{source.name}-{form}")
            out["store"] += self.rows(run_id)
            out["airflow_log"] = task_log.getvalue() + "\n".join(logs.lines)
        out["slack"] = json.dumps(self.slack.requests[sent_before:])
        assert "could not be trusted" in out["slack"]  # the alert did go out
        self.stored[key] = out
        return out

    def rows(self, run_id: int) -> str:
        """The run's whole rows, as PostgreSQL renders them: eval_result (details included) and
        eval_result_question."""
        import psycopg

        assert self.store_url is not None
        plain = make_url(self.store_url).set(drivername="postgresql")
        with psycopg.connect(plain.render_as_string(hide_password=False)) as conn:
            run = conn.execute(
                "SELECT row_to_json(r)::text FROM eval_result r WHERE id = %s", [run_id]
            ).fetchall()
            questions = conn.execute(
                "SELECT row_to_json(q)::text FROM eval_result_question q WHERE run_id = %s",
                [run_id],
            ).fetchall()
        assert run and questions
        assert MASK in questions[0][0]
        return "\n".join(row[0] for row in [*run, *questions])


def run_args(config: Path, golden: Path, fmt: str) -> list[str]:
    return ["run", str(golden), "api", "--config", str(config), "--format", fmt]


def cli_group() -> Any:
    from retrieval_eval.cli import cli

    return cli


def airflow_run(config: Path, golden: Path, run_key: str) -> int:
    """The DAG's work as its tasks do it, in one process: the labelled run its tasks bind (the
    store resolved as a task resolves it), then the alert task's body (it prints the message and
    the outcome to the task log and posts to Slack)."""
    from types import SimpleNamespace

    from retrieval_eval.airflow import tasks
    from retrieval_eval.airflow.branching import BRANCH_INVALID, choose_branch
    from retrieval_eval.airflow.runtime import labelled_run
    from retrieval_eval.workflows.base import run_in_process

    job = {
        "config_path": str(config),
        "set": str(golden),
        "retriever": "api",
        "alerts": [{"type": "slack", "connection_id": "slack_r"}],
        "ui_base_url": "https://airflow.example/re",
        "store_connection_id": None,
    }
    _, dag_id, run_id = run_key.split(":", 2)  # the run key a DAG run of dag_id gives
    context = {"dag_run": SimpleNamespace(dag_id=dag_id, run_id=run_id), "params": {}}
    workflow = labelled_run(job, context)
    record = run_in_process(workflow)
    assert workflow.failure(record) is None
    recorded = record.model_dump(mode="json")
    assert choose_branch(recorded) == BRANCH_INVALID
    tasks._alert(job, "invalid_run", recorded)
    return int(recorded["run_id"])


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Matrix]:
    with RankingServer() as server, load_slack_server().RecordingServer() as slack:
        yield Matrix(tmp_path_factory.mktemp("leaks"), server, slack)


@pytest.fixture(scope="module")
def stored_matrix(matrix: Matrix, pg_url: str) -> Iterator[Matrix]:
    pytest.importorskip("airflow.providers.slack")
    from store.builders import pg_schema

    with pg_schema(pg_url) as url:
        matrix.store_url = make_url(url).set(password=STORE_PASSWORD).render_as_string(False)
        yield matrix
        matrix.store_url = None


def assert_nowhere(source: Source, form: str, sink: str, text: str) -> None:
    leaked = sorted(n for n in source.needles if n in text)
    if leaked:
        where = text.find(leaked[0])
        context = text[max(0, where - 80) : where + len(leaked[0]) + 40]
        pytest.fail(f"{source.name}/{form} leaked {leaked} into {sink}: …{context}…")


@pytest.mark.parametrize("sink", CLI_SINKS)
@pytest.mark.parametrize(("source", "form"), CELLS)
def test_no_secret_reaches_the_cli_logs_or_spool(
    matrix: Matrix, source: str, form: str, sink: str
) -> None:
    if source.startswith("conn_"):
        pytest.importorskip("airflow.sdk")
    text = matrix.cli_sinks(SOURCES[source], form)[sink]
    assert_nowhere(SOURCES[source], form, sink, text)


@pytest.mark.parametrize("sink", STORED_SINKS)
@pytest.mark.parametrize(("source", "form"), CELLS)
def test_no_secret_reaches_the_store_airflow_log_or_slack(
    stored_matrix: Matrix, source: str, form: str, sink: str
) -> None:
    text = stored_matrix.stored_sinks(SOURCES[source], form)[sink]
    assert_nowhere(SOURCES[source], form, sink, text)


def test_real_cli_process_keeps_secrets_out_of_stdout_and_stderr(tmp_path: Path) -> None:
    """The real ``retrieval-eval run`` process: Python's logging writes the retry warnings to
    its real stderr. Every echo form of a header from the environment, and the store password."""
    source = SOURCES["env_bearer"]
    forms = echo_forms(source.value)
    config = tmp_path / "cfg.yaml"
    golden = tmp_path / "set.yaml"
    questions = [
        {"id": name.replace("_", "-"), "question": f"ask {name}", "form": "gap"} for name in forms
    ]
    golden.write_text(yaml.safe_dump({"identifier": "leak.process", "questions": questions}))
    with RankingServer() as server:
        server.behaviour.echo = {f"ask {name}": name for name in forms}
        spec = {
            "type": "http",
            "url": server.url + "/s",
            "ids": "hits.hits[*]._id",
            "headers_from_env": {"Authorization": "AUTH_R"},
            "retries": 1,
            "backoff_s": 0,
        }
        config.write_text(yaml.safe_dump({"retrievers": {"api": spec}}))
        env = {**os.environ, "AUTH_R": source.value, "RETRIEVAL_EVAL_HOME": str(tmp_path / "h")}
        done = subprocess.run(
            [
                str(Path(sys.executable).parent / "retrieval-eval"),
                *run_args(config, golden, "json"),
                "--db",
                UNREACHABLE,
            ],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 3, done.stderr
    assert "retrying" in done.stderr and MASK in done.stderr  # the warnings, masked
    errors = [q["error"] for q in json.loads(done.stdout)["questions"]]
    assert all("HTTP 500" in e and MASK in e for e in errors), errors
    for stream, text in (("stdout", done.stdout), ("stderr", done.stderr)):
        assert_nowhere(source, "every form", stream, text)
        assert STORE_PASSWORD not in text


def test_echo_bodies_quote_the_secret_where_an_error_shows_it() -> None:
    """The matrix's premise: without redaction, each form would be in the quoted body (its
    first BODY_QUOTE_CHARS characters, spaces collapsed). Some forms, such as ``credential=``
    followed by the value, are caught by their shape as well, registered or not."""
    for source in SOURCES.values():
        for form, echoed in echo_forms(source.value).items():
            quoted = " ".join(echo_body(source.value, form).split())[:BODY_QUOTE_CHARS]
            assert echoed in quoted, (source.name, form)

"""Credentials the tool never registered are masked by their shape, wherever an error goes.

A module retriever raises with a database URL's password, a URL's userinfo token, secret query
parameters and bearer tokens in its exception text; each must be masked in the store's rows,
the text report, the JSON of ``show`` and the dashboard's run page and its JSON, while ordinary
error texts (a URL with a port and a plain query, ``key=value``) stay verbatim.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner
from fastapi.testclient import TestClient

from retrieval_eval.cli import cli
from retrieval_eval.safety.redaction import MASK, mask_credentials, redact
from retrieval_eval.webui.app import create_app

# question id -> (what the retriever raises, the secret in it, the masked text)
LEAKS = {
    "db-url": (
        "could not connect to postgresql://u:hunter2@h/db",
        "hunter2",
        f"postgresql://u:{MASK}@h/db",
    ),
    "userinfo": (
        "GET https://user:tok-55aa77bb@host/search failed",
        "tok-55aa77bb",
        f"https://user:{MASK}@host/search",
    ),
    "api-key": (
        "500 from https://h/s?q=refund&api_key=k3y-zz998877&limit=12",
        "k3y-zz998877",
        f"?q=refund&api_key={MASK}&limit=12",
    ),
    "token-param": (
        "denied for /search?token=t0ken-qq1122 (expired)",
        "t0ken-qq1122",
        f"?token={MASK} (expired)",
    ),
    "bearer": (
        "401: sent Authorization: Bearer eyJhbGci0.sig-4f4f4f",
        "eyJhbGci0.sig-4f4f4f",
        f"Authorization: Bearer {MASK}",
    ),
}
ORDINARY = {
    "plain-url": "HTTPConnectionPool(host='127.0.0.1', port=8080): Max retries exceeded with "
    "url: /search?q=refund&limit=12",
    "key-value": "expected key=value pairs, got 'sort_key=title'",
    "bearer-word": "HTTP 401: Bearer authentication required for postgresql://eval@db:5432/r",
}
MESSAGES = {**{k: v[0] for k, v in LEAKS.items()}, **ORDINARY}

SET = "identifier: leaky.shapes\nquestions:\n" + "".join(
    f"  - {{id: {qid}, question: {qid}, form: match, expected_document_ids: [d]}}\n"
    for qid in MESSAGES
)
RETRIEVER = f"""
MESSAGES = {MESSAGES!r}

def retrieve(question, limit):
    raise RuntimeError(MESSAGES[question])
"""


@pytest.mark.parametrize("qid", LEAKS)
def test_each_credential_shape_is_masked(qid: str) -> None:
    text, secret, masked = LEAKS[qid]
    assert secret not in redact(text) and masked in redact(text)
    assert mask_credentials(redact(text)) == redact(text)  # masking again changes nothing


@pytest.mark.parametrize(
    "text",
    [
        *ORDINARY.values(),
        "retrieval timed out after 30 s",
        "KeyError: 'token'",
        "Basic authentication failed",
        "see https://example.com:8443/a/b@c",
        "http://localhost:9200/idx/_search?size=12&sort=score",
    ],
)
def test_ordinary_error_texts_stay_intact(text: str) -> None:
    assert redact(text) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"api_key": "sk-live-0099"}', f'{{"api_key": "{MASK}"}}'),
        ("client_secret=abc-123-xyz&x=1", f"client_secret={MASK}&x=1"),
        ("Authorization: Basic dXNlcjpwYXNzd29yZA==", f"Authorization: Basic {MASK}"),
        ("header Basic dXNlcjpwYXNzd29yZA== sent", f"header Basic {MASK} sent"),
    ],
)
def test_secret_assignments_and_basic_credentials(text: str, expected: str) -> None:
    assert redact(text) == expected


@pytest.fixture
def stored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path, str]:
    """(store URL, store file, the text report of a run) of the leaky retriever, saved."""
    (tmp_path / "shapes.yaml").write_text(SET)
    (tmp_path / "leaky_shapes.py").write_text(RETRIEVER)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [str(tmp_path), *sys.path])
    monkeypatch.delitem(sys.modules, "leaky_shapes", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    path = tmp_path / "results.sqlite"
    url = f"sqlite:///{path}"
    done = CliRunner().invoke(
        cli,
        ["run", "shapes.yaml", "leaky_shapes:retrieve", "--db", url, "--max-error-rate", "1"],
    )
    assert done.exit_code == 0, done.output
    return url, path, done.output


def _assert_masked(where: str, text: str) -> None:
    for qid, (_, secret, masked) in LEAKS.items():
        assert secret not in text, (where, qid)
        assert masked in text, (where, qid)
    for qid, message in ORDINARY.items():
        assert message in text, (where, qid)


def test_the_store_rows_and_the_text_report(stored: tuple[str, Path, str]) -> None:
    _, path, report = stored
    # the table wraps a long error over lines of its cell; blank cells and borders in between
    _assert_masked("text report", " ".join(report.replace("│", " ").split()))
    with sqlite3.connect(path) as connection:
        errors = [row[0] for row in connection.execute("SELECT error FROM eval_result_question")]
        dump = "\n".join(connection.iterdump())
    assert len(errors) == len(MESSAGES)
    _assert_masked("eval_result_question.error", "\n".join(errors))
    for _, secret, _ in LEAKS.values():
        assert secret not in dump


def test_show_json_and_the_dashboard(stored: tuple[str, Path, str]) -> None:
    import html

    url, _, _ = stored
    done = CliRunner().invoke(cli, ["runs", "show", "1", "--format", "json", "--db", url])
    assert done.exit_code == 0, done.output
    _assert_masked(
        "show --format json", "\n".join(q["error"] for q in json.loads(done.stdout)["questions"])
    )
    app = create_app(url, require_auth=False)
    try:
        with TestClient(app) as client:
            page = client.get("/runs/1")
            api = client.get("/api/runs/1")
    finally:
        app.state.store_source.close()
    assert page.status_code == 200 and api.status_code == 200
    _assert_masked("run page", html.unescape(page.text))
    _assert_masked("/api/runs/1", "\n".join(q["error"] for q in api.json()["questions"]))

"""The http adapter against a real threaded HTTP server on 127.0.0.1."""

from __future__ import annotations

import itertools
import json
import logging
import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from servers.ranking_server import RankingServer

from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet
from retrieval_eval.reports.report import render
from retrieval_eval.retrievers.http import HttpRetrievalError, HttpRetriever, fill
from retrieval_eval.retrievers.options import BuildContext

SECRET = "tok-7f3a9c1e-very-secret"


@pytest.fixture
def server() -> Iterator[RankingServer]:
    with RankingServer() as running:
        yield running


def build(base: str, **options: Any) -> HttpRetriever:
    spec = {"url": base, "ids": "hits.hits[*]._id", "backoff_s": 0.01, **options}
    return HttpRetriever.from_options("search", spec, BuildContext(source="cfg.yaml"))


def golden(*questions: tuple[str, list[str]]) -> GoldenQuestionSet:
    return GoldenQuestionSet(
        identifier="http.test",
        questions=[
            GoldenQuestion(id=f"q{i}", question=text, form="match", expected_document_ids=ids)
            for i, (text, ids) in enumerate(questions)
        ],
    )


def test_fill_replaces_placeholders_everywhere_and_limit_becomes_int() -> None:
    template = {"q": {"match": "{question}"}, "size": "{limit}", "tags": ["top {limit}", 3]}
    assert fill(template, "how?", 12) == {"q": {"match": "how?"}, "size": 12, "tags": ["top 12", 3]}


def test_get_with_query_params(server: RankingServer) -> None:
    server.behaviour.rankings["reset password"] = ["d3", "d1", "d3", "d2"]
    retriever = build(server.url + "/search", params={"query": "{question}", "size": "{limit}"})
    assert retriever.retrieve("reset password", 2) == ["d3", "d1"]
    seen = server.requests[-1]
    assert (seen.method, seen.path) == ("GET", "/search")
    assert seen.params == {"query": ["reset password"], "size": ["2"]}


def test_post_with_json_body_template(server: RankingServer) -> None:
    server.behaviour.rankings["refunds"] = ["a", "b"]
    body = {
        "query": {"bool": {"must": {"match": {"text": {"query": "{question}"}}}}},
        "size": "{limit}",
    }
    retriever = build(server.url + "/_search", method="post", body=body)
    assert retriever.retrieve("refunds", 12) == ["a", "b"]
    sent = server.requests[-1].body
    assert sent["size"] == 12  # an int, not "12"
    assert sent["query"]["bool"]["must"]["match"]["text"]["query"] == "refunds"


def test_default_templates_and_question_in_url_is_encoded(server: RankingServer) -> None:
    server.behaviour.rankings["a b/c?"] = ["x"]
    assert build(server.url + "/s").retrieve("a b/c?", 5) == ["x"]
    assert server.requests[-1].params == {"q": ["a b/c?"], "limit": ["5"]}
    assert build(server.url + "/s", method="POST").retrieve("a b/c?", 5) == ["x"]
    assert server.requests[-1].body == {"query": "a b/c?", "limit": 5}
    build(server.url + "/by/{question}", params={}).retrieve("a b/c?", 5)
    assert server.requests[-1].path == "/by/a%20b%2Fc%3F"


def test_requests_overlap_up_to_max_concurrency(server: RankingServer) -> None:
    server.behaviour.latency_s = 0.05
    questions = [(f"question {i}", [f"d{i}"]) for i in range(32)]
    server.behaviour.rankings.update({text: ids for text, ids in questions})
    retriever = build(server.url + "/s")
    assert retriever.max_concurrency == 8
    result = evaluate(golden(*questions), retriever)
    assert result.top1_hits == 32
    assert 1 < server.max_in_flight <= 8


def test_single_concurrency_never_overlaps(server: RankingServer) -> None:
    server.behaviour.latency_s = 0.01
    result = evaluate(
        golden(*[(f"q {i}", []) for i in range(6)]), build(server.url + "/s", max_concurrency=1)
    )
    assert result.question_count == 6
    assert server.max_in_flight == 1


def test_5xx_retried_then_recorded_as_error(server: RankingServer) -> None:
    server.behaviour.status["broken"] = 503
    server.behaviour.fail_first["flaky"] = 2
    server.behaviour.rankings["flaky"] = ["t"]
    result = evaluate(golden(("broken", []), ("flaky", ["t"])), build(server.url + "/s", retries=2))
    broken, flaky = result.questions
    assert server.attempts["broken"] == 3
    assert broken.error is not None and "HTTP 503" in broken.error
    assert "after 3 attempts" in broken.error
    assert not broken.top1_hit and not broken.top3_hit  # an outage never scores as "nothing"
    assert server.attempts["flaky"] == 3
    assert flaky.error is None and flaky.top1_hit
    assert result.error_count == 1 and not result.valid


# urllib3 would retry a 413 carrying Retry-After; a request too large stays too large
@pytest.mark.parametrize(("status", "retry_after"), [(403, None), (413, "1")])
def test_4xx_not_retried(server: RankingServer, status: int, retry_after: str | None) -> None:
    server.behaviour.status["forbidden"] = status
    if retry_after is not None:
        server.behaviour.retry_after["forbidden"] = retry_after
    with pytest.raises(HttpRetrievalError, match=rf"HTTP {status} \(client error, not retried\)"):
        build(server.url + "/s", retries=3).retrieve("forbidden", 3)
    assert server.attempts["forbidden"] == 1


def test_timeouts_retried_then_recorded(server: RankingServer) -> None:
    server.behaviour.slow["slow"] = 30.0  # far past the 0.1 s budget, even on a loaded machine
    retriever = build(server.url + "/s", timeout_s=0.1, retries=1)
    result = evaluate(golden(("slow", [])), retriever, RunSettings(timeout_s=10))
    error = result.questions[0].error
    assert error is not None and "timed out after 0.1 s" in error and "after 2 attempts" in error
    assert server.attempts["slow"] == 2


def test_connection_refused_retried_then_recorded() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # closed again before use: nothing listens there
    with pytest.raises(
        HttpRetrievalError,
        match=r"connection failed: NewConnectionError.*Connection refused.*after 2 attempts",
    ):
        build(f"http://127.0.0.1:{port}/s", retries=1).retrieve("anything", 3)


def gaps(server: RankingServer) -> list[float]:
    """Seconds between one request and the next, as the server saw them arrive."""
    times = [seen.at for seen in server.requests]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_backoff_follows_the_documented_schedule(
    server: RankingServer, caplog: pytest.LogCaptureFixture
) -> None:
    # backoff_s × 2^n: the first retry waits too (urllib3's own schedule would not)
    server.behaviour.status["down"] = 503
    with pytest.raises(HttpRetrievalError, match=r"HTTP 503: .*\(after 3 attempts\)"):
        build(server.url + "/s", retries=2, backoff_s=0.2).retrieve("down", 3)
    first, second = gaps(server)
    assert first >= 0.2 and second >= 0.4
    warnings = [r.getMessage() for r in caplog.records if r.name.endswith("retrievers.http")]
    assert [w.split("; ")[1] for w in warnings] == ["retrying in 0.20 s", "retrying in 0.40 s"]
    assert "attempt 1/3 failed (HTTP 503: " in warnings[0]


@pytest.mark.parametrize("status", [503, 429])
def test_retry_after_is_waited_for_instead_of_the_backoff(
    server: RankingServer, caplog: pytest.LogCaptureFixture, status: int
) -> None:
    server.behaviour.fail_first["busy"] = 1
    server.behaviour.fail_status["busy"] = status
    server.behaviour.retry_after["busy"] = "1"
    server.behaviour.rankings["busy"] = ["d1"]
    assert build(server.url + "/s", backoff_s=0.01).retrieve("busy", 3) == ["d1"]
    assert server.attempts["busy"] == 2
    assert gaps(server)[0] >= 0.95  # one second asked, not the 0.01 s backoff
    assert f"attempt 1/3 failed (HTTP {status}: " in caplog.text
    assert "retrying in 1.00 s" in caplog.text


def test_retry_after_is_capped_at_timeout_s(
    server: RankingServer, caplog: pytest.LogCaptureFixture
) -> None:
    # an hour asked: the call must still end in bounded time (bounds_own_time)
    server.behaviour.fail_first["later"] = 1
    server.behaviour.retry_after["later"] = "3600"
    server.behaviour.rankings["later"] = ["d1"]
    assert build(server.url + "/s", timeout_s=0.3).retrieve("later", 3) == ["d1"]
    assert gaps(server)[0] >= 0.28
    assert "retrying in 0.30 s" in caplog.text


def test_unreadable_retry_after_falls_back_to_the_backoff(server: RankingServer) -> None:
    server.behaviour.fail_first["odd"] = 1
    server.behaviour.retry_after["odd"] = "soon, maybe"
    server.behaviour.rankings["odd"] = ["d1"]
    assert build(server.url + "/s").retrieve("odd", 3) == ["d1"]
    assert server.attempts["odd"] == 2


def test_429_is_retried_even_without_retry_after_and_reported_like_a_5xx(
    server: RankingServer,
) -> None:
    server.behaviour.status["slow down"] = 429
    with pytest.raises(HttpRetrievalError, match=r"HTTP 429: .*injected.*\(after 2 attempts\)"):
        build(server.url + "/s", retries=1).retrieve("slow down", 3)
    assert server.attempts["slow down"] == 2


def test_redirect_is_not_followed(server: RankingServer) -> None:
    server.behaviour.redirect["moved"] = "/elsewhere?q=moved"
    server.behaviour.rankings["moved"] = ["d1"]
    with pytest.raises(HttpRetrievalError, match=r"HTTP 302: .*matched nothing"):
        build(server.url + "/s").retrieve("moved", 3)
    assert [seen.path for seen in server.requests] == ["/s"]


def test_secret_query_parameter_never_reaches_a_log(
    server: RankingServer, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.DEBUG)  # urllib3's request and retry logging included
    server.behaviour.status["down"] = 503
    errors = []
    with pytest.raises(HttpRetrievalError) as info:
        build(f"{server.url}/s?api_key={SECRET}", retries=1).retrieve("down", 3)
    errors.append(str(info.value))
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # nothing listens there once closed
    with pytest.raises(HttpRetrievalError) as info:
        build(f"http://127.0.0.1:{port}/s?api_key={SECRET}", retries=1).retrieve("down", 3)
    errors.append(str(info.value))
    # urllib3 did log the urls, and its retry after a connection failure, masked
    assert "api_key=***" in caplog.text and "Retrying (" in caplog.text
    assert caplog.text.count("retrying in") == 2  # one warning of ours per retried failure
    out = capsys.readouterr()
    for text in [caplog.text, out.out, out.err, *errors]:
        assert SECRET not in text


@pytest.mark.parametrize(
    ("body", "ids", "message"),
    [
        (
            "<html>busy</html>",
            "hits.hits[*]._id",
            r"HTTP 200: the response is not JSON: <html>busy",
        ),
        ('{"hits": {"total": 0}}', "hits.hits[*]._id", r"HTTP 200: .* matched nothing"),
        ('{"hits": {"hits": "x"}}', "hits.hits", "gave a str, expected a list"),
        ('{"hits": {"hits": [{"_id": 1.5}]}}', "hits.hits[*]._id", "gave float at position 0"),
        ('{"hits": {"hits": [{"_id": {"a": 1}}]}}', "hits.hits[*]._id", "gave dict at position 0"),
    ],
)
def test_malformed_response_is_a_useful_error(
    server: RankingServer, body: str, ids: str, message: str
) -> None:
    server.behaviour.raw["q"] = body
    with pytest.raises(HttpRetrievalError, match=message):
        build(server.url + "/s", ids=ids).retrieve("q", 3)
    assert server.attempts["q"] == 1  # a malformed 200 is not retried


def test_integer_ids_become_strings(server: RankingServer) -> None:
    server.behaviour.raw["q"] = '{"results": [{"id": 7}, {"id": "8"}]}'
    assert build(server.url + "/s", ids="results[*].id").retrieve("q", 3) == ["7", "8"]


def test_secret_header_sent_but_never_logged_or_reported(
    server: RankingServer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("SEARCH_TOKEN", f"Bearer {SECRET}")
    caplog.set_level(logging.DEBUG)  # urllib3's debug logging included
    server.behaviour.rankings["ok"] = ["d1"]
    server.behaviour.echo_headers.add("leaky")  # a 500 whose body quotes the request headers
    server.behaviour.status["denied"] = 401
    retriever = build(
        server.url + "/s",
        headers={"X-Team": "search"},
        headers_from_env={"Authorization": "SEARCH_TOKEN"},
        retries=1,
    )
    result = evaluate(golden(("ok", ["d1"]), ("leaky", []), ("denied", [])), retriever)
    assert server.requests[0].headers["Authorization"] == f"Bearer {SECRET}"
    assert server.requests[0].headers["X-Team"] == "search"
    leaky = result.questions[1].error or ""
    assert "HTTP 500" in leaky and "***" in leaky  # the echoed header arrived, masked
    assert "retrying" in caplog.text  # the retry was logged...
    reports = [render(result, fmt) for fmt in ("text", "json", "markdown")]
    out = capsys.readouterr()
    # ...but the token appears nowhere: not in logs, errors, reports or the terminal
    for text in [caplog.text, out.out, out.err, repr(retriever), *reports]:
        assert SECRET not in text
    assert SECRET not in json.dumps([q.error for q in result.questions])

    # and through the CLI, end to end, with the JSON report on stdout
    config = tmp_path / "cfg.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "retrievers": {
                    "api": {
                        "type": "http",
                        "url": server.url + "/s",
                        "ids": "hits.hits[*]._id",
                        "headers_from_env": {"Authorization": "SEARCH_TOKEN"},
                        "retries": 0,
                    }
                }
            }
        )
    )
    set_file = tmp_path / "set.yaml"
    set_file.write_text(
        yaml.safe_dump(
            {
                "identifier": "http.cli",
                "questions": [
                    {"id": "a", "question": "ok", "form": "match", "expected_document_ids": ["d1"]},
                    {"id": "b", "question": "leaky", "form": "gap"},
                ],
            }
        )
    )
    from retrieval_eval.cli import cli

    run = CliRunner().invoke(
        cli, ["run", str(set_file), "api", "--config", str(config), "--format", "json"]
    )
    assert run.exit_code == 3, run.output  # one error in two questions: an invalid run
    report = json.loads(run.stdout)
    assert report["top1_hits"] == 1 and "HTTP 500" in report["questions"][1]["error"]
    assert SECRET not in run.output and SECRET not in caplog.text


def test_airflow_connection_supplies_header_and_base_url(
    server: RankingServer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    pytest.importorskip("airflow.sdk")
    host, port = server.url.removeprefix("http://").split(":")
    monkeypatch.setenv(
        "AIRFLOW_CONN_SEARCH_API",
        json.dumps(
            {
                "conn_type": "http",
                "host": host,
                "port": int(port),
                "schema": "http",
                "password": SECRET,
                "extra": {"headers": {"X-Api-Key": "key-0b5e8d"}},
            }
        ),
    )
    server.behaviour.rankings["q"] = ["d"]
    server.behaviour.status["bad"] = 500
    retriever = build("/s", connection_id="search_api", retries=0)
    assert retriever.retrieve("q", 3) == ["d"]
    headers = server.requests[-1].headers
    assert headers["Authorization"] == f"Bearer {SECRET}"
    assert headers["X-Api-Key"] == "key-0b5e8d"
    with pytest.raises(HttpRetrievalError) as info:
        retriever.retrieve("bad", 3)
    assert SECRET not in str(info.value) and SECRET not in caplog.text


def test_a_header_variable_that_is_not_text_is_named_not_shown(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # os.environ keeps a byte that is not UTF-8 as a surrogate; urllib3 failed on it with a
    # UnicodeEncodeError naming no variable (QA finding)
    monkeypatch.setenv("SEARCH_TOKEN", os.fsdecode(b"Bearer s3cr\xffet-token"))
    with pytest.raises(ConfigError) as info:
        build("http://127.0.0.1:9/s", headers_from_env={"Authorization": "SEARCH_TOKEN"})
    message = str(info.value)
    assert (
        "headers_from_env.Authorization: environment variable SEARCH_TOKEN holds a byte" in message
    )
    assert "s3cr" not in message


def test_unknown_airflow_connection_is_a_config_error() -> None:
    pytest.importorskip("airflow.sdk")
    with pytest.raises(ConfigError, match=r"retrievers.search.connection_id: .*'missing_conn'"):
        build("http://127.0.0.1:9/s", connection_id="missing_conn")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (
            {"headers_from_env": {"Authorization": "NO_SUCH_VAR_4242"}},
            r"cfg.yaml: retrievers.search.headers_from_env.Authorization: environment variable "
            "NO_SUCH_VAR_4242 is not set",
        ),
        ({"ids": "hits[*"}, r"retrievers.search.ids: not a valid JMESPath expression"),
        ({"method": "DELETE"}, r"retrievers.search.method: "),
        ({"retries": -1}, r"retrievers.search.retries: "),
        ({"url": "ftp://x"}, r"retrievers.search.url: must start with http:// or https://"),
        ({"url": "/relative"}, r"retrievers.search.url: a relative url needs connection_id"),
        ({"proxy": "x"}, r"retrievers.search.proxy: unknown option"),
    ],
)
def test_configuration_errors_name_the_option(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        build("http://127.0.0.1:9/s", **options)


def test_registered_as_a_builtin_type() -> None:
    from retrieval_eval.retrievers.registry import adapter_types

    assert adapter_types()["http"] == "retrieval_eval.retrievers.http:HttpRetriever"


def test_lookup_asks_which_ids_exist_in_batches(server: RankingServer) -> None:
    server.behaviour.documents = {"d1", "d3", "d7"}
    lookup = {"url": server.url + "/_mget", "body": {"ids": "{ids}"}, "ids": "docs[?found]._id"}
    retriever = build(server.url + "/_search", lookup={**lookup, "batch_size": 2})
    assert retriever.existing_ids_source == "http lookup"
    assert retriever.existing_ids(["d7", "d1", "gone", "d3", "d1"]) == {"d1", "d3", "d7"}
    sent = [r.body["ids"] for r in server.requests if r.path == "/_mget"]
    assert sent == [["d1", "d3"], ["d7", "gone"]]  # distinct, sorted, batch_size per request


def test_lookup_by_query_parameter(server: RankingServer) -> None:
    server.behaviour.documents = {"a"}
    lookup = {
        "url": server.url + "/_mget",
        "method": "GET",
        "params": {"ids": "{ids}"},
        "ids": "docs[?found]._id",
    }
    retriever = build(server.url + "/_search", lookup=lookup)
    assert retriever.existing_ids(["a", "b"]) == {"a"}
    # exactly "{ids}" is a list, sent as a repeated parameter; "{ids}" inside text is joined
    assert server.requests[-1].params == {"ids": ["a", "b"]}
    lookup["params"] = {"ids": "in:{ids}"}
    build(server.url + "/_search", lookup=lookup).existing_ids(["a", "b"])
    assert server.requests[-1].params == {"ids": ["in:a,b"]}


def test_without_lookup_no_capability_and_failures_are_errors(server: RankingServer) -> None:
    assert not hasattr(build(server.url + "/_search"), "existing_ids")
    lookup = {"url": server.url + "/nothing/_mget", "ids": "nothing.here"}
    # the error names the lookup endpoint, not the search one
    with pytest.raises(
        HttpRetrievalError, match=r"POST http://127.0.0.1:\d+/nothing/_mget: .*matched nothing"
    ):
        build(server.url + "/_search", lookup=lookup).existing_ids(["a"])
    with pytest.raises(ConfigError, match=r"retrievers.search.lookup.url: a relative url"):
        build(server.url + "/_search", lookup={"url": "/_mget", "ids": "x"})
    with pytest.raises(ConfigError, match=r"lookup.ids"):
        build(server.url + "/_search", lookup={"ids": "[["})


def test_texts_request_gives_the_documents_texts_in_batches(server: RankingServer) -> None:
    server.behaviour.documents = {"d1", "d2", "d3"}
    server.behaviour.texts = {"d1": "one", "d2": None, "d3": "three"}
    texts = {
        "url": server.url + "/_mget",
        "body": {"ids": "{ids}"},
        "texts": "docs[?found].[_id, _source.body]",
        "batch_size": 2,
    }
    retriever = build(server.url + "/_search", texts=texts)
    assert not hasattr(build(server.url + "/_search"), "document_texts")  # only when configured
    # d2 has no text (null), gone is not found
    assert retriever.document_texts(["d3", "gone", "d1", "d2"]) == {"d1": "one", "d3": "three"}
    sent = [r.body["ids"] for r in server.requests if r.path == "/_mget"]
    assert sent == [["d1", "d2"], ["d3", "gone"]]
    # texts alone (a projection drops the null: they would land on the wrong ids) is refused
    bad = build(server.url + "/_search", texts={**texts, "texts": "docs[*]._source.body"})
    with pytest.raises(HttpRetrievalError, match=r"must give a list of \[id, text\] pairs"):
        bad.document_texts(["d1", "d2"])
    with pytest.raises(ConfigError, match=r"retrievers.search.texts.url: a relative url"):
        build(server.url + "/_search", texts={**texts, "url": "/_mget"})

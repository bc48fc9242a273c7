"""A real search service for the ``http`` adapter tests: a threaded HTTP server on 127.0.0.1.

It answers Elasticsearch-shaped JSON (``{"hits": {"hits": [{"_id": ...}]}}``) for the question
found in the query string (``q``/``query``) or the JSON body (the first ``query``/``q`` string,
searched depth first). Behaviour is set per question text on :class:`Behaviour`; the server
counts attempts per question and the most requests it ever held at once. ``retry_after`` adds a
``Retry-After`` header to a question's failing answers, ``redirect`` answers 302; each request's arrival time is kept.

``echo`` makes a careless service that quotes a credential back in a 500's body, in one of the
forms of :func:`echo_forms`: the request's ``Authorization`` header, or ``echo_secret`` (any
secret the tool knows that the service should not, such as a store password as ``user:password``).

A request to a path ending in ``/_mget`` is an existence lookup (the adapter's ``lookup``): it
asks for ids in the body's ``ids`` list or the comma-separated ``ids`` query parameter, and is
answered Elasticsearch-style, ``{"docs": [{"_id": ..., "found": true|false}]}``, from
:attr:`Behaviour.documents`; a document with a text in :attr:`Behaviour.texts` also has
``"_source": {"body": text}`` (the adapter's ``texts`` request).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, quote, quote_plus, urlsplit

# filler around an ``embedded`` echo: the credential sits inside the part an error quotes, and a
# long tail follows that the quote cuts off
_BEFORE = "<html><body><h1>502 upstream</h1><p>trace: " + "x" * 60 + " credential="
_AFTER = "</p>" + "<!-- padding -->" * 120 + "</body></html>"


@dataclass
class Behaviour:
    rankings: dict[str, list[Any]] = field(default_factory=dict)  # question -> ids
    latency_s: float = 0.0  # every request
    slow: dict[str, float] = field(default_factory=dict)  # question -> extra latency
    status: dict[str, int] = field(default_factory=dict)  # question -> always this status
    fail_first: dict[str, int] = field(default_factory=dict)  # question -> 503s before success
    fail_status: dict[str, int] = field(default_factory=dict)  # question -> fail_first's status
    retry_after: dict[str, str] = field(default_factory=dict)  # question -> its failures' header
    redirect: dict[str, str] = field(default_factory=dict)  # question -> a 302 to this Location
    raw: dict[str, str] = field(default_factory=dict)  # question -> this body, verbatim
    echo_headers: set[str] = field(default_factory=set)  # question -> 500 quoting Authorization
    echo: dict[str, str] = field(default_factory=dict)  # question -> 500 quoting in this form
    echo_secret: str | None = None  # what ``echo`` quotes instead of the Authorization header
    documents: set[str] = field(default_factory=set)  # ids an ``/_mget`` lookup finds
    texts: dict[str, str | None] = field(default_factory=dict)  # id -> its ``_source.body``


@dataclass
class Seen:
    method: str
    path: str
    params: dict[str, list[str]]
    body: Any
    headers: dict[str, str]
    at: float = 0.0  # time.monotonic() when it arrived


def find_question(value: Any) -> str | None:
    if isinstance(value, dict):
        for key in ("query", "q"):
            if isinstance(value.get(key), str):
                return str(value[key])
        for item in value.values():
            found = find_question(item)
            if found is not None:
                return found
    if isinstance(value, list):
        for item in value:
            found = find_question(item)
            if found is not None:
                return found
    return None


class RankingServer:
    def __init__(self, behaviour: Behaviour | None = None) -> None:
        self.behaviour = behaviour or Behaviour()
        self.attempts: Counter[str] = Counter()
        self.requests: list[Seen] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self._lock = threading.Lock()
        self._closed = threading.Event()  # ends every delay at once when the test is over
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> RankingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # keep test output clean
                pass

            def do_GET(self) -> None:
                server._serve(self, None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                server._serve(self, body)

        return Handler

    def _serve(self, handler: BaseHTTPRequestHandler, body: Any) -> None:
        parts = urlsplit(handler.path)
        params = parse_qs(parts.query)
        question = find_question(body)
        if question is None:
            question = (params.get("q") or params.get("query") or [""])[0]
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            self.attempts[question] += 1
            attempt = self.attempts[question]
            self.requests.append(
                Seen(
                    handler.command,
                    parts.path,
                    params,
                    body,
                    dict(handler.headers.items()),
                    time.monotonic(),
                )
            )
        try:
            status, text = self._answer(handler, question, params, body, attempt)
        finally:
            # out of flight once the answer is ready, BEFORE it is sent: the client may send its
            # next request the moment the answer arrives, before this thread gets the CPU back
            with self._lock:
                self.in_flight -= 1
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            # may find the client gone (a timeout test)
            self._send(handler, status, text, self.behaviour.retry_after.get(question))

    def _answer(
        self,
        handler: BaseHTTPRequestHandler,
        question: str,
        params: dict[str, list[str]],
        body: Any,
        attempt: int,
    ) -> tuple[int, str]:
        b = self.behaviour
        if urlsplit(handler.path).path.endswith("/_mget"):
            asked = body.get("ids") if isinstance(body, dict) else None
            if asked is None:
                asked = ",".join(params.get("ids", [])).split(",")
            docs = [
                {"_id": d, "found": d in b.documents}
                | ({"_source": {"body": b.texts[d]}} if d in b.texts else {})
                for d in asked
            ]
            return 200, json.dumps({"docs": docs})
        self._closed.wait(b.latency_s + b.slow.get(question, 0.0))
        if question in b.echo:
            value = b.echo_secret or handler.headers.get("Authorization") or ""
            return 500, echo_body(value, b.echo[question])
        if question in b.echo_headers:
            echo = {"error": "rejected", "authorization": handler.headers.get("Authorization")}
            return 500, json.dumps(echo)
        if question in b.redirect and not urlsplit(handler.path).path.startswith("/elsewhere"):
            return 302, json.dumps({"moved_to": b.redirect[question]})
        if question in b.status:
            return b.status[question], json.dumps({"error": "injected"})
        if attempt <= b.fail_first.get(question, 0):
            return b.fail_status.get(question, 503), json.dumps({"error": "warming up"})
        if question in b.raw:
            return 200, b.raw[question]
        size = _size(params, body)
        ids = b.rankings.get(question, [])[:size]
        hits = [{"_id": doc, "_score": float(len(ids) - i)} for i, doc in enumerate(ids)]
        return 200, json.dumps({"hits": {"total": len(ids), "hits": hits}})

    @staticmethod
    def _send(
        handler: BaseHTTPRequestHandler, status: int, text: str, retry_after: str | None
    ) -> None:
        data = text.encode("utf-8")
        handler.send_response(status)
        if retry_after is not None and status >= 400:
            handler.send_header("Retry-After", retry_after)
        if status == 302:
            handler.send_header("Location", json.loads(text)["moved_to"])
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)


def echo_forms(value: str) -> dict[str, str]:
    """Every form in which a careless service may quote a credential ``value``.

    ``value`` is a header (``Bearer tok``, ``Basic <base64 of user:password>``) or a bare
    ``user:password``. Always: ``verbatim``, ``no_scheme`` (after the first space), ``json``
    (JSON-escaped, unquoted), ``url`` and ``url_plus`` (percent-encoded), ``embedded`` (verbatim
    inside a long HTML page). For Basic auth or a ``user:password``: ``decoded`` (user:password),
    ``password`` and ``base64`` (of user:password).
    """
    bare = value.split(" ", 1)[-1]
    forms = {
        "verbatim": value,
        "no_scheme": bare,
        "json": json.dumps(value)[1:-1],
        "url": quote(value, safe=""),
        "url_plus": quote_plus(value),
        "embedded": value,
    }
    decoded = None
    if value.lower().startswith("basic "):
        try:
            decoded = base64.b64decode(bare, validate=True).decode()
        except (binascii.Error, UnicodeDecodeError):
            decoded = None
    elif " " not in value and ":" in value:
        decoded = value
    if decoded is not None and ":" in decoded:
        forms["decoded"] = decoded
        forms["password"] = decoded.split(":", 1)[1]
        forms["base64"] = base64.b64encode(decoded.encode()).decode()
    return forms


def echo_body(value: str, form: str) -> str:
    """A 500's body quoting ``value`` in ``form`` (see :func:`echo_forms`), as plain text."""
    quoted = echo_forms(value)[form]
    if form == "embedded":
        return _BEFORE + quoted + _AFTER
    return f"upstream rejected the credentials: {quoted}"


def _size(params: dict[str, list[str]], body: Any) -> int:
    for key in ("size", "limit"):
        if isinstance(body, dict) and isinstance(body.get(key), int):
            return int(body[key])
        if key in params:
            return int(params[key][0])
    return 10

"""A real OpenAI-compatible judge for the model-judge tests: a threaded HTTP server on 127.0.0.1.

``POST /v1/chat/completions`` reads the query and the passage out of the UMBRELA prompt and
answers ``##final score: N`` where N is the seeded simulated judge's grade of that pair
(:attr:`JudgeBehaviour.grades`, passage text -> grade). Per passage text it can instead answer
429 the first times (``limited``, with ``Retry-After: 0``), answer slowly (``slow``, seconds),
or answer words without a score (``unreadable``). A request without the expected bearer key is
401, quoting the Authorization header it got back in its body (a careless service: the tool
must redact it). Every request is counted per passage; ``usage`` reports fixed token counts.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PROMPT_TOKENS = 200
COMPLETION_TOKENS = 5


@dataclass
class JudgeBehaviour:
    key: str
    grades: dict[str, int] = field(default_factory=dict)  # passage text -> the judge's grade
    limited: dict[str, int] = field(default_factory=dict)  # passage -> 429s before the answer
    slow: dict[str, float] = field(default_factory=dict)  # passage -> seconds before answering
    unreadable: set[str] = field(default_factory=set)
    asked: Counter[str] = field(default_factory=Counter)  # passage -> requests
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def requests(self) -> int:
        with self.lock:
            return sum(self.asked.values())


def passage_of(prompt: str) -> tuple[str, str]:
    query = prompt.split("\nQuery: ", 1)[1].split("\nPassage: ", 1)[0]
    passage = prompt.split("\nPassage: ", 1)[1].split("\n\nSplit this problem", 1)[0]
    return query, passage


class _Handler(BaseHTTPRequestHandler):
    behaviour: JudgeBehaviour

    def log_message(self, *args: object) -> None:
        pass

    def _send(self, status: int, payload: object, headers: dict[str, str] | None = None) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        # the client may have given up waiting (the slow answer past its timeout)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            self.wfile.write(body)

    def do_POST(self) -> None:
        b = self.behaviour
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        if not self.path.endswith("/chat/completions"):
            self._send(404, {"error": "not found"})
            return
        auth = self.headers.get("Authorization", "")
        if auth != f"Bearer {b.key}":
            self._send(401, {"error": f"invalid key: {auth}"})
            return
        _, passage = passage_of(body["messages"][0]["content"])
        with b.lock:
            b.asked[passage] += 1
            count = b.asked[passage]
        if count <= b.limited.get(passage, 0):
            self._send(429, {"error": "rate limited"}, {"Retry-After": "0"})
            return
        if passage in b.slow:
            time.sleep(b.slow[passage])
        if passage in b.unreadable:
            content = "The passage looks relevant to me."
        else:
            content = f"##final score: {b.grades[passage]}"
        self._send(
            200,
            {
                "id": "sim",
                "object": "chat.completion",
                "model": body["model"],
                "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
                "usage": {"prompt_tokens": PROMPT_TOKENS, "completion_tokens": COMPLETION_TOKENS},
            },
        )


def start(behaviour: JudgeBehaviour) -> tuple[ThreadingHTTPServer, str]:
    """The server, serving in a daemon thread, and its base URL (``.../v1``)."""
    handler = type("Handler", (_Handler,), {"behaviour": behaviour})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"

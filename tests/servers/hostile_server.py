"""A real misbehaving HTTP server on 127.0.0.1 for the outbound-call bounds tests.

Modes (the path's first segment): ``/trickle`` sends its headers, then a JSON body one byte every
:data:`STEP_S`; ``/trickle-headers`` sends even its headers so; ``/huge`` answers a body of
``size`` bytes (default 40 MiB) as fast as it can, counting in :attr:`HostileServer.written` the
bytes the client took before it hung up; ``/redirect-302`` and ``/redirect-307`` point
to another host (``Location: http://elsewhere.invalid/hook``); ``/ok`` answers 200 at once. Each
request's path is counted in :attr:`HostileServer.hits`.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BODY = b'{"hits": {"hits": [{"_id": "d1"}]}, "ok": true}'

# a byte every quarter second: well inside any per-read timeout the tests set (1 s and more),
# so only a total deadline can end a call, however loaded the machine
STEP_S = 0.25


class HostileServer:
    def __init__(self, size: int = 40 * 2**20) -> None:
        self.size = size
        self.hits: Counter[str] = Counter()
        self.written = 0
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> HostileServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self._answer()

            def _answer(self) -> None:
                mode = self.path.split("?", 1)[0].strip("/").split("/", 1)[0]
                server.hits[mode] += 1
                with contextlib.suppress(OSError):
                    getattr(self, "_" + mode.replace("-", "_"))()

            def _ok(self) -> None:
                self._head(200, len(BODY))
                self.wfile.write(BODY)

            def _head(self, status: int, length: int, **headers: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(length))
                for name, value in headers.items():
                    self.send_header(name, value)
                self.end_headers()

            def _trickle(self) -> None:
                self._head(200, len(BODY))
                for byte in BODY:
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(STEP_S)

            def _trickle_headers(self) -> None:
                head = f"HTTP/1.1 200 OK\r\nContent-Length: {len(BODY)}\r\n" + "X-Pad: a\r\n" * 40
                for byte in head.encode():
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                    time.sleep(STEP_S)

            def _huge(self) -> None:
                self._head(200, server.size)
                block = b" " * 2**20
                for _ in range(server.size // len(block)):
                    self.wfile.write(block)
                    server.written += len(block)

            def _redirect(self, status: int) -> None:
                self.send_response(status)
                self.send_header("Location", "http://elsewhere.invalid/hook")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def _redirect_302(self) -> None:
                self._redirect(302)

            def _redirect_307(self) -> None:
                self._redirect(307)

        return Handler

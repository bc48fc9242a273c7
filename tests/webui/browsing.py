"""Browser test plumbing: Debian's headless Chromium and the dashboard served by uvicorn.

``chromium_path()`` skips the test with a reason where Chromium is absent, and fails it instead
when ``RETRIEVAL_EVAL_REQUIRE_BROWSER=1`` (set by ``.ci/run``). ``serve(app)`` runs an ASGI app
on a free port of 127.0.0.1 in a thread and yields its base URL. The ``browser`` fixture
(``conftest.py``) launches Chromium with :data:`CHROMIUM_ARGS`.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("RETRIEVAL_EVAL_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def chromium_path() -> str:
    path = CHROMIUM if Path(CHROMIUM).is_file() else shutil.which("chromium")
    if not path:
        reason = f"headless Chromium not found at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("RETRIEVAL_EVAL_REQUIRE_BROWSER", "") not in ("", "0"):
            pytest.fail(reason + " — RETRIEVAL_EVAL_REQUIRE_BROWSER is set, so this is a failure")
        pytest.skip(reason)
    return path


@contextmanager
def launched_chromium() -> Iterator[Any]:
    """Headless Chromium launched by playwright (the test is skipped where it is absent)."""
    executable = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        try:
            yield launched
        finally:
            launched.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def serve(app: Any) -> Iterator[str]:
    import uvicorn

    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)

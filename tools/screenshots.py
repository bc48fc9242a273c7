"""The docs' two screenshots (docs/images/): the dashboard's history of the demo and a run report.

Runs the demo evaluation twice into a temporary SQLite store (a baseline, then a run judged
against it), serves the dashboard with ``retrieval-eval
serve`` on 127.0.0.1 and writes ``runs report``; headless Chromium (playwright, the system's
``chromium``) captures both. ``python tools/screenshots.py`` rewrites the PNGs.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
IMAGES = ROOT / "docs" / "images"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp:
        db = f"sqlite:///{tmp}/demo.sqlite"
        env = {**os.environ, "RETRIEVAL_EVAL_HOME": tmp}
        config = "examples/retrieval_eval.yaml"  # relative: the report names it as given
        cli = [str(BIN / "retrieval-eval")]
        run = [*cli, "run", "handbook.demo", "handbook_bm25", "--db", db, "--config", config]
        subprocess.run(run, cwd=ROOT, env=env, check=True, capture_output=True)
        subprocess.run(run, cwd=ROOT, env=env, check=True, capture_output=True)
        html = Path(tmp, "report.html")
        subprocess.run(
            [*cli, "runs", "report", "2", "-o", str(html), "--db", db, "--config", config],
            cwd=ROOT,
            env=env,
            check=True,
            capture_output=True,
        )
        port = _free_port()
        server = subprocess.Popen(
            [*cli, "serve", "--db", db, "--port", str(port)],
            cwd=ROOT,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            url = f"http://127.0.0.1:{port}/"
            for _ in range(100):
                try:
                    urllib.request.urlopen(url, timeout=1)
                    break
                except OSError:
                    time.sleep(0.2)
            IMAGES.mkdir(parents=True, exist_ok=True)
            with sync_playwright() as p:
                browser = p.chromium.launch(
                    executable_path="/usr/bin/chromium",
                    args=["--headless", "--no-sandbox", "--disable-gpu"],
                )
                page = browser.new_page(viewport={"width": 1100, "height": 700})
                page.goto(url + "history?set=handbook.demo&retriever=handbook_bm25")
                page.screenshot(path=str(IMAGES / "dashboard.png"))
                page.goto(html.as_uri())
                page.screenshot(path=str(IMAGES / "report.png"))
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()

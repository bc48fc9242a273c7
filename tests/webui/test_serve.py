"""``retrieval-eval serve``: the dashboard as its own process, without Airflow (issue 21.5).

Each test starts the real command as a subprocess: on a free port it serves the pages of a
store filled by real runs (and stops cleanly on Ctrl-C); a bad store URL, a port in use and a
missing ``webui`` extra are exit 2 with the reason, before anything listens.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

from helpers import served_page

from webui.browsing import free_port
from webui.fill import SET, Filled

CLI = str(Path(sys.executable).parent / "retrieval-eval")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("RETRIEVAL_EVAL_")}


def _get(url: str) -> str:
    with urllib.request.urlopen(url, timeout=10) as answer:
        return answer.read().decode()


def _serve(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CLI, "serve", *args], env=env or _env(), capture_output=True, text=True, timeout=60
    )


def test_serve_starts_the_dashboard_on_the_port_and_stops_on_ctrl_c(
    filled_sqlite: Filled, tmp_path: Path
) -> None:
    port = free_port()
    server = subprocess.Popen(
        [CLI, "serve", "--db", filled_sqlite.url, "--port", str(port)],
        cwd=tmp_path,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        overview = served_page(server, f"http://127.0.0.1:{port}/")
        assert SET in overview and "handbook_bm25" in overview
        run_id = filled_sqlite.regression_ids[0]
        page = _get(f"http://127.0.0.1:{port}/runs/{run_id}")
        assert f"Run {run_id}: {SET}" in page
    finally:
        server.send_signal(signal.SIGINT)
        _, err = server.communicate(timeout=20)
    assert server.returncode == 0, err
    assert f"at http://127.0.0.1:{port}/ (Ctrl-C stops it)" in err
    assert "warning" not in err  # 127.0.0.1: no warning about the missing login


def test_a_bad_store_url_is_exit_2() -> None:
    done = _serve("--db", "mysql://eval@db/results", "--port", str(free_port()))
    assert done.returncode == 2, done.stderr
    assert "unsupported store backend 'mysql'" in done.stderr


def test_a_port_in_use_is_exit_2_naming_it(filled_sqlite: Filled) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = _serve("--db", filled_sqlite.url, "--port", str(port))
    assert done.returncode == 2, done.stderr
    assert f"cannot listen on 127.0.0.1:{port}" in done.stderr and "--port" in done.stderr


def test_without_the_webui_extra_it_names_the_extra(filled_sqlite: Filled, tmp_path: Path) -> None:
    """uvicorn made unimportable (as in an install without the extra) by a module ahead of it."""
    (tmp_path / "uvicorn").mkdir()
    (tmp_path / "uvicorn" / "__init__.py").write_text(
        "raise ImportError(\"No module named 'uvicorn'\", name='uvicorn')\n"
    )
    path = os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))
    env = {**_env(), "PYTHONPATH": path}
    done = _serve("--db", filled_sqlite.url, "--port", str(free_port()), env=env)
    assert done.returncode == 2, done.stderr
    assert "the dashboard needs the webui extra (uvicorn is not installed)" in done.stderr
    assert "pip install 'rag-retrieval-eval[webui]'" in done.stderr

"""The plugin inside real Airflow: registered once, mounted under its prefix, behind Airflow's login."""

from __future__ import annotations

import importlib.metadata
import json
import os
import runpy
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from webui.fill import BM25, SET, Filled

ROOT = Path(__file__).resolve().parents[2]
PLUGIN_FILE = ROOT / "plugins" / "retrieval_eval_plugin.py"

_PROBE = """
import json
from airflow import plugins_manager
info = plugins_manager.get_plugin_info()
apps, _ = plugins_manager.get_fastapi_plugins()
print(json.dumps({
    "names": [p["name"] for p in info],
    "errors": plugins_manager.get_import_errors(),
    "prefixes": [a["url_prefix"] for a in apps],
    "views": [v for p in info for v in p.get("external_views", [])],
}))
"""


def test_plugins_folder_and_entry_point_register_the_plugin_once(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AIRFLOW_HOME": str(tmp_path),
        "AIRFLOW__CORE__PLUGINS_FOLDER": str(PLUGIN_FILE.parent),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }
    # cwd outside the repository, as for Airflow's console scripts: with `python -c` in the repo
    # root, a stale retrieval_eval.egg-info there would list the entry point a second time
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["names"].count("retrieval_eval") == 1
    assert found["errors"] == {}  # no "already registered, skipping" import error
    assert found["prefixes"].count("/retrieval-eval") == 1
    view = next(v for v in found["views"] if v["name"] == "Retrieval quality")
    assert view["href"] == "/retrieval-eval/" and view["url_route"] == "retrieval-quality"


def test_plugins_folder_file_exposes_the_plugin_when_the_package_has_no_entry_point(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    installed = runpy.run_path(str(PLUGIN_FILE))
    assert "RetrievalEvalPlugin" not in installed  # the entry point registers it instead
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda **_: [])
    bare = runpy.run_path(str(PLUGIN_FILE))
    assert bare["RetrievalEvalPlugin"].name == "retrieval_eval"


@pytest.fixture
def airflow_api(
    filled_sqlite: Filled, mint_token: Callable[..., str], monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    """Airflow's own API server app, with the plugin loaded through its entry point."""
    monkeypatch.setenv(
        "RETRIEVAL_EVAL_DB", filled_sqlite.url
    )  # the plugin reads the store the DAGs use
    from airflow.api_fastapi.app import create_app

    with TestClient(create_app()) as client:
        yield client
    from retrieval_eval.webui.plugin import RetrievalEvalPlugin

    RetrievalEvalPlugin.fastapi_apps[0]["app"].state.store_source.close()


def test_dashboard_inside_airflow_requires_a_login_and_then_shows_the_runs(
    airflow_api: TestClient, filled_sqlite: Filled
) -> None:
    assert airflow_api.get("/retrieval-eval/").status_code == 401
    assert airflow_api.get("/retrieval-eval/api/overview").status_code == 401
    # log in the way a script does: Airflow's /auth/token with the simple auth manager's password
    from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager

    passwords_file = SimpleAuthManager.get_generated_password_file()
    username, password = next(iter(json.loads(Path(passwords_file).read_text()).items()))
    login = airflow_api.post("/auth/token", json={"username": username, "password": password})
    assert login.status_code in (200, 201), login.text
    token = login.json()["access_token"]
    api = airflow_api.get(
        "/retrieval-eval/api/overview", headers={"Authorization": f"Bearer {token}"}
    )
    assert api.status_code == 200
    bm25 = next(p for p in api.json()["pairs"] if p["retriever"] == BM25)
    assert bm25["latest"]["run_id"] == filled_sqlite.run_ids[BM25][-1]
    # the UI's cookie works too, and links carry the mount prefix
    airflow_api.cookies.set("_token", token)
    page = airflow_api.get("/retrieval-eval/")
    assert page.status_code == 200
    assert f'href="/retrieval-eval/history?set={SET}&amp;retriever={BM25}"' in page.text

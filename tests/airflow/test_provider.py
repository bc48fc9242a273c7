"""retrieval-eval as an Airflow provider, seen by Airflow itself in real subprocesses.

The ``apache_airflow_provider`` entry point is read by ``airflow providers`` and the
ProvidersManager (connection types, hooks, form fields, the extra link); a ``retrieval_eval_store``
connection made by ``airflow connections add`` is the store a DAG run writes to (a real
PostgreSQL database); and ``retrieval-eval airflow init`` writes a DAG file a DagBag loads,
without the git checkout.
"""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
from dag_helpers import BIN, EXAMPLES, ROOT, airflow_cli, run_dag, write_config
from helpers import Database

from retrieval_eval import DISTRIBUTION, __version__

pytestmark = pytest.mark.airflow

BM25_DAG = "retrieval_eval__handbook_demo__handbook_bm25"

MANAGER = """
import json
from airflow.providers_manager import ProvidersManager
pm = ProvidersManager()
pm.initialize_providers_hooks()
pm.initialize_providers_extra_links()
print(json.dumps({
    "behaviours": {k: v for k, v in pm.field_behaviours.items() if k.startswith("retrieval_eval")},
    "widgets": sorted(k for k in pm.connection_form_widgets if "retrieval_eval" in k),
    "links": sorted(pm.extra_links_class_names),
}))
"""

HOOKS = """
import json
from retrieval_eval.airflow.hooks import RetrievalEvalStoreHook, RetrievalEvalWebhookHook
store = RetrievalEvalStoreHook(retrieval_eval_store_conn_id="re_store_env").get_conn()
print(json.dumps([store, RetrievalEvalWebhookHook().get_conn()]))
"""

DAGBAG = """
import json, sys
from airflow.dag_processing.dagbag import DagBag
bag = DagBag(dag_folder=sys.argv[1])
print(json.dumps({"dags": sorted(bag.dag_ids), "errors": list(bag.import_errors.values())}))
"""


def _json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_airflow_lists_the_provider_its_hooks_and_connection_forms(
    airflow_env: dict[str, str],
) -> None:
    provider = _json(airflow_cli(airflow_env, "providers", "get", DISTRIBUTION, "-o", "json"))
    assert provider == [{"Provider": DISTRIBUTION, "Version": __version__}]
    hooks = _json(airflow_cli(airflow_env, "providers", "hooks", "-o", "json"))
    ours = {
        row["connection_type"]: row["class"] for row in hooks if row["package_name"] == DISTRIBUTION
    }
    assert ours == {
        "retrieval_eval_store": "retrieval_eval.airflow.hooks.RetrievalEvalStoreHook",
        "retrieval_eval_webhook": "retrieval_eval.airflow.hooks.RetrievalEvalWebhookHook",
    }
    seen = _json(
        subprocess.run(
            [sys.executable, "-c", MANAGER], env=airflow_env, capture_output=True, text=True
        )
    )
    store, webhook = (
        seen["behaviours"]["retrieval_eval_store"],
        seen["behaviours"]["retrieval_eval_webhook"],
    )
    assert store["relabeling"] == {"host": "PostgreSQL host", "schema": "Database"}
    assert webhook["relabeling"]["host"] == "Webhook URL"
    assert webhook["relabeling"]["password"] == "Bearer token"
    assert "login" in webhook["hidden_fields"]
    assert seen["widgets"] == ["extra__retrieval_eval_store__url"]
    assert "retrieval_eval.airflow.links.RunPageLink" in seen["links"]


def test_the_hooks_read_their_connections_field_by_field(airflow_env: dict[str, str]) -> None:
    store = {"conn_type": "retrieval_eval_store", "host": "db.internal", "port": 5433}
    store |= {"schema": "results", "login": "eval", "password": "pw"}
    webhook = {"conn_type": "retrieval_eval_webhook", "host": "hooks.example.com/x", "port": 8443}
    env = {
        **airflow_env,
        "AIRFLOW_CONN_RE_STORE_ENV": json.dumps(store),
        "AIRFLOW_CONN_RETRIEVAL_EVAL_WEBHOOK": json.dumps(webhook),  # the webhook's default id
    }
    done = subprocess.run([sys.executable, "-c", HOOKS], env=env, capture_output=True, text=True)
    assert _json(done) == [
        "postgresql+psycopg://eval:pw@db.internal:5433/results",
        "https://hooks.example.com:8443/x",
    ]


def test_a_store_connection_made_by_the_cli_is_the_store_of_a_dag_run(
    airflow_env: dict[str, str], pg_url: str, tmp_path: Path
) -> None:
    database = Database(pg_url, "unused", name=f"re_provider_{uuid.uuid4().hex[:8]}")
    database.create()
    try:
        admin = database.url.split("://", 1)[1]
        user, host = admin.split(":", 1)[0], admin.split("@", 1)[1].rsplit("/", 1)[0]
        hostname, _, port = host.partition(":")
        conn_id = f"re_store_{uuid.uuid4().hex[:6]}"
        added = airflow_cli(
            airflow_env,
            "connections", "add", conn_id, "--conn-type", "retrieval_eval_store",
            "--conn-host", hostname, "--conn-port", port or "5432",
            "--conn-schema", database.name, "--conn-login", user,
            "--conn-password", "pw-Secret-5",
        )  # fmt: skip
        assert added.returncode == 0, added.stderr[-2000:]
        decoy = tmp_path / "not-this.sqlite"  # the config's own store, which must stay unused
        config = write_config(
            tmp_path / "config.yaml",
            store=f"sqlite:///{decoy}",
            retriever="handbook_bm25",
            airflow={"store_connection_id": conn_id},
        )
        outcome = run_dag(airflow_env, BM25_DAG, extra_env={"RETRIEVAL_EVAL_CONFIG": str(config)})
        assert outcome["state"] == "success", outcome["log"][-4000:]
        assert "pw-Secret-5" not in outcome["log"]
        import psycopg

        with psycopg.connect(database.url.replace("unused", "")) as conn:
            stored = conn.execute("SELECT set_identifier FROM eval_result").fetchall()
        assert stored == [("handbook.demo",)]
        assert not decoy.exists()
    finally:
        database.drop()


def test_airflow_init_writes_the_dag_file_a_dagbag_loads(
    airflow_env: dict[str, str], tmp_path: Path
) -> None:
    dags = tmp_path / "dags"
    done = subprocess.run(
        [str(BIN / "retrieval-eval"), "airflow", "init", str(dags)],
        env=airflow_env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    written = dags / "retrieval_eval_dags.py"
    # the checkout's DAG file is the one the package ships
    assert written.read_bytes() == (ROOT / "dags" / "retrieval_eval_dags.py").read_bytes()

    def bag(folder: Path, **env: str) -> dict[str, Any]:
        return _json(
            subprocess.run(
                [sys.executable, "-c", DAGBAG, str(folder)],
                env={**airflow_env, **env},
                capture_output=True,
                text=True,
            )
        )

    config = {"RETRIEVAL_EVAL_CONFIG": str(EXAMPLES / "retrieval_eval.yaml")}
    loaded, checkout = bag(dags, **config), bag(ROOT / "dags", **config)
    assert loaded["errors"] == [] and loaded["dags"]
    assert loaded["dags"] == checkout["dags"]
    # no config and no demo beside it: the import error says what to set
    (error,) = bag(dags)["errors"]
    assert "RETRIEVAL_EVAL_CONFIG" in error

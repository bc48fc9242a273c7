"""A CLI that starts at once: what each command imports before it has parsed its arguments, and
which errors come before anything heavy.

Each case runs the CLI in a fresh interpreter through a small wrapper that reports the modules
loaded when the command ends; the in-process click runner cannot tell, since the test process
has imported everything already. Plus the store lookup ``run --no-save`` makes without
SQLAlchemy, checked against the store layer's own.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli
from retrieval_eval.cli.db_cmd import plain_sqlite_file
from retrieval_eval.config.models import Config
from retrieval_eval.store import resolve_store_url

ROOT = Path(__file__).resolve().parents[2]
DEMO_CONFIG = str(ROOT / "examples" / "retrieval_eval.yaml")
DEMO_SET = str(ROOT / "examples" / "golden" / "handbook.yaml")

ADAPTERS = ("lexical", "http", "dense", "langchain", "postgres_fts", "chunked", "run_file")
# what a command that does not use them must never load
HEAVY = {
    "pandas", "numpy", "sqlalchemy", "alembic", "bm25s", "Stemmer", "urllib3", "httpx",
    "psycopg", "jmespath", *(f"retrieval_eval.retrievers.{name}" for name in ADAPTERS),
}  # fmt: skip
STORE = {"sqlite3", "sqlalchemy", "alembic", "psycopg"}
SET_MODULES = {"retrieval_eval.golden.models", "retrieval_eval.golden.loaders"}

WRAPPER = """
import json, sys
heavy = set(json.loads(sys.argv[1]))
from retrieval_eval.cli import main
code = 0
try:
    main(sys.argv[2:])
except SystemExit as exc:
    code = exc.code
loaded = sorted(
    {name if name in heavy else name.split(".")[0] for name in sys.modules}.intersection(heavy)
)
print("\\nLOADED " + json.dumps({"code": code, "modules": loaded}), file=sys.stderr)
"""

TWO = """identifier: cli.two
questions:
  - {id: q-hit, question: first, form: match, expected_document_ids: [a]}
  - {id: q-gap, question: second, form: gap, expected_document_ids: [b]}
"""
RETRIEVER = "def always_a(question, limit):\n    return ['a', 'c']\n"


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "two.yaml").write_text(TWO, encoding="utf-8")
    (folder / "startup_retrievers.py").write_text(RETRIEVER, encoding="utf-8")
    return folder


def loaded(work: Path, *args: str, watch: set[str] = HEAVY) -> tuple[int, list[str], str]:
    """Run ``retrieval-eval ARGS`` in a new interpreter: its exit code, the watched modules it
    loaded, its stderr."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("RETRIEVAL_EVAL_DB", "RETRIEVAL_EVAL_CONFIG")
    }
    env["RETRIEVAL_EVAL_HOME"] = str(work / "home")  # no store there: nothing to compare with
    done = subprocess.run(
        [sys.executable, "-c", WRAPPER, json.dumps(sorted(watch)), *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    head, _, report = done.stderr.rpartition("\nLOADED ")
    assert report, done.stderr
    found = json.loads(report)
    return found["code"], found["modules"], head


def test_help_loads_nothing_heavy(work: Path) -> None:
    assert loaded(work, "--help", watch=HEAVY | {"pydantic"})[:2] == (0, [])
    assert loaded(work, "run", "--help")[:2] == (0, [])


def test_a_usage_error_loads_nothing_heavy(work: Path) -> None:
    code, modules, stderr = loaded(work, "run")
    assert (code, modules) == (2, [])
    assert "Missing argument 'SET'" in stderr


def test_sets_list_loads_nothing_heavy(work: Path) -> None:
    code, modules, _ = loaded(work, "sets", "list", "--config", DEMO_CONFIG)
    assert (code, modules) == (0, [])


def test_retrievers_list_loads_no_adapter(work: Path) -> None:
    code, modules, _ = loaded(work, "retrievers", "list", "--config", DEMO_CONFIG)
    assert (code, modules) == (0, [])


def test_an_unknown_set_is_reported_before_anything_heavy(work: Path) -> None:
    code, modules, stderr = loaded(
        work, "run", "handbook.dmeo", "handbook_bm25", "--config", DEMO_CONFIG
    )
    assert (code, modules) == (2, [])
    assert (
        "unknown golden set 'handbook.dmeo' (did you mean 'handbook.demo'?); "
        "available: handbook.demo"
    ) in stderr


@pytest.mark.parametrize(
    "retriever,message",
    [
        (
            "handbook_bm52",
            "unknown retriever 'handbook_bm52' (did you mean 'handbook_bm25'?); "
            "configured: handbook_bm25",
        ),
        ("no_such_module:search", "cannot import module 'no_such_module'"),
        ("startup_retrievers:nothing", "has no attribute 'nothing'"),
    ],
)
def test_an_unknown_retriever_is_reported_before_anything_heavy(
    work: Path, retriever: str, message: str
) -> None:
    # a configured lexical retriever: building it would load bm25s; the set loads only pydantic
    code, modules, stderr = loaded(work, "run", DEMO_SET, retriever, "--config", DEMO_CONFIG)
    assert (code, modules) == (2, [])
    assert message in stderr


def test_a_bad_store_url_is_reported_before_the_retriever_is_built(work: Path) -> None:
    code, modules, stderr = loaded(
        work, "run", "handbook.demo", "handbook_bm25", "--config", DEMO_CONFIG, "--db", "mysql://x"
    )
    assert code == 2 and "unsupported store backend 'mysql'" in stderr
    assert not {"bm25s", "retrieval_eval.retrievers.lexical"} & set(modules)


def test_run_no_save_without_a_store_never_loads_the_store(work: Path) -> None:
    args = ("run", "two.yaml", "startup_retrievers:always_a", "--no-save", "--format", "json")
    code, modules, _ = loaded(work, *args, watch=STORE | {"rich", "pandas"})
    # pandas: only DataFrames need it, a run builds none
    assert (code, modules) == (0, [])
    assert not (work / "home").exists()  # and no empty store was created on the way


def test_a_run_on_a_jsonl_set_without_a_config_loads_no_yaml(work: Path) -> None:
    rows = [{"id": "q1", "question": "first", "form": "match", "expected_document_ids": ["a"]}]
    (work / "two.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ("run", "two.jsonl", "startup_retrievers:always_a", "--no-save", "--format", "json")
    assert loaded(work, *args, watch={"yaml"})[:2] == (0, [])
    # a YAML set or a config file does load it, as the watch above would notice
    yaml_set = ("run", "two.yaml", "startup_retrievers:always_a", "--no-save", "--format", "json")
    assert loaded(work, *yaml_set, watch={"yaml"})[:2] == (0, ["yaml"])


def test_run_no_save_without_a_store_judges_the_run_as_a_first_run(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "startup_retrievers", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    monkeypatch.delenv("RETRIEVAL_EVAL_CONFIG", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(work / "home"))
    args = ["run", "two.yaml", "startup_retrievers:always_a", "--no-save"]
    result = CliRunner().invoke(cli, [*args, "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["run_id"], data["saved"], data["regression"]["state"]) == (None, False, "baseline")
    assert "spool_path" not in data
    text = CliRunner().invoke(cli, args)
    assert "Verdict: BASELINE" in text.stdout and "Saved as run" not in text.stdout
    # a pinned baseline still goes to the store, which knows no such run
    pinned = CliRunner().invoke(cli, [*args, "--baseline", "7"])
    assert pinned.exit_code == 2 and "no stored run with id 7" in pinned.stderr
    assert not (work / "home" / "spool").exists()


def test_a_run_computes_the_labels_fingerprint_once(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A 20,000-question set takes ~30 ms to fingerprint: once per run, saved or not."""
    from retrieval_eval.golden import fingerprint

    calls: list[str] = []
    original = fingerprint.labels_fingerprint

    def counted(golden_set: Any) -> str:
        calls.append(golden_set.identifier)
        return original(golden_set)

    monkeypatch.setattr(fingerprint, "labels_fingerprint", counted)
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "startup_retrievers", raising=False)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(work / "home"))
    db = f"sqlite:///{work / 'store.sqlite'}"
    for extra in (["--no-save"], ["--db", db], ["--db", db]):  # storeless, first, compared
        calls.clear()
        args = ["run", "two.yaml", "startup_retrievers:always_a", "--format", "json", *extra]
        result = CliRunner().invoke(cli, args)
        assert result.exit_code == 0, result.output
        assert calls == ["cli.two"], extra


def _saved_run(work: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A run of the two-question set saved in a SQLite store in ``work``: its URL, the run id."""
    monkeypatch.chdir(work)
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "startup_retrievers", raising=False)
    db = f"sqlite:///{work / 'store.sqlite'}"
    saved = CliRunner().invoke(
        cli, ["run", "two.yaml", "startup_retrievers:always_a", "--db", db, "--format", "json"]
    )
    return db, str(json.loads(saved.stdout)["run_id"])


def test_history_and_show_load_the_store_but_neither_pandas_nor_an_adapter(
    work: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db, run_id = _saved_run(work, monkeypatch)
    # they read through the Store (SQLAlchemy); a stored run needs no YAML parser, set loader,
    # set models nor migrations
    watch = HEAVY | {"rich", "retrieval_eval.config.models", "yaml", *SET_MODULES}
    for args in (
        ("runs", "list", "cli.two", "startup_retrievers:always_a", "--format", "json"),
        ("runs", "show", run_id, "--format", "json"),
    ):
        assert loaded(work, *args, "--db", db, watch=watch)[:2] == (0, ["sqlalchemy"]), args
    # the text of history and show draws rich tables, and that is all they add to the store
    history = ("runs", "list", "cli.two", "startup_retrievers:always_a")
    assert loaded(work, *history, "--db", db, watch=watch)[:2] == (0, ["rich", "sqlalchemy"])
    assert loaded(work, "runs", "show", run_id, "--db", db, watch=watch)[:2] == (
        0,
        ["rich", "sqlalchemy"],
    )


# --- the store file `run --no-save` looks for without SQLAlchemy ----------------------------


@pytest.mark.parametrize(
    "db,env,store",
    [
        ("sqlite:////abs/results.sqlite", None, None),
        ("sqlite:///rel/results.sqlite", None, None),
        ("sqlite:///~/results.sqlite", None, None),
        (None, "sqlite:////from/env.sqlite", None),
        (None, "sqlite:///relative-env.sqlite", "sqlite:///ignored.sqlite"),
        (None, None, "sqlite:///next-to-config.sqlite"),
        (None, None, "sqlite:////abs/config.sqlite"),
        (None, None, None),
    ],
)
def test_the_plain_sqlite_file_is_the_one_the_store_layer_resolves(
    db: str | None,
    env: str | None,
    store: str | None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", str(tmp_path / "home"))
    if env is None:
        monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    else:
        monkeypatch.setenv("RETRIEVAL_EVAL_DB", env)
    config = Config(store=store, path=tmp_path / "conf" / "retrieval_eval.yaml")
    path = plain_sqlite_file(db, config)
    assert path is not None
    assert resolve_store_url(db, config) == f"sqlite:///{path}"


@pytest.mark.parametrize("home", ["relative-home", "~/somewhere"])
def test_the_default_store_file_follows_retrieval_eval_home(
    home: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RETRIEVAL_EVAL_HOME", home)
    monkeypatch.delenv("RETRIEVAL_EVAL_DB", raising=False)
    path = plain_sqlite_file(None, Config())
    assert path is not None and resolve_store_url(None, Config()) == f"sqlite:///{path}"


@pytest.mark.parametrize(
    "db",
    [
        "postgresql://eval@127.0.0.1:5432/results",
        "sqlite:///results.sqlite?timeout=5",
        "sqlite:///:memory:",
        "sqlite://",
        "sqlite+pysqlite:///x.sqlite",
        "sqlite:///with%20space.sqlite",
    ],
)
def test_any_other_url_is_left_to_the_store_layer(
    db: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert plain_sqlite_file(db, Config()) is None

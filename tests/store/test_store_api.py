"""One store API: no caller outside ``retrieval_eval/store/`` touches a private name of the store,
and ``Store.transaction`` is the one way to a connection, on real SQLite and PostgreSQL.

The scan reads the package, the tests and the benchmarks (``ast``) for an attribute whose name is
a private member of the store's classes (``_guard``, ``_url``, ``_load``...) read on anything but
``self``/``cls``, and for a private name imported from or read on a store module; it fails naming
each place as ``file:line``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import insert, select, text
from sqlalchemy.engine import make_url

from retrieval_eval.errors import StoreUnavailableError
from retrieval_eval.store import Store, open_store
from retrieval_eval.store.engine import StoreFailedError
from retrieval_eval.store.schema import eval_alert

ROOT = Path(__file__).resolve().parents[2]
STORE = ROOT / "retrieval_eval" / "store"
SCANNED = ("retrieval_eval", "tests", "benchmarks", "tools")
PASSWORD = "s3cret-pw-4711"


def _python_files(folder: Path) -> Iterator[Path]:
    yield from sorted(p for p in folder.rglob("*.py") if ".venv" not in p.parts)


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def private_members() -> set[str]:
    """The private names the store's classes define or set on ``self``."""
    names: set[str] = set()
    for path in _python_files(STORE):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ClassDef):
                continue
            for item in ast.walk(node):
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and _private(item.name):
                    names.add(item.name)
                if (
                    isinstance(item, ast.Attribute)
                    and isinstance(item.value, ast.Name)
                    and item.value.id == "self"
                    and _private(item.attr)
                ):
                    names.add(item.attr)
    return names


def private_uses(path: Path, members: set[str], shown: str) -> list[str]:
    """Each place in ``path`` that reads a store private: ``shown:line name``."""
    source = path.read_text(encoding="utf-8")
    if "retrieval_eval.store" not in source and not any(f".{m}" in source for m in members):
        return []  # nothing to look at: most files, read without parsing
    tree = ast.parse(source)
    modules: set[str] = set()  # local names bound to a store module
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "retrieval_eval.store"
        ):
            for alias in node.names:
                if _private(alias.name):
                    found.append(f"{shown}:{node.lineno} imports {alias.name}")
                elif node.module == "retrieval_eval.store":
                    modules.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("retrieval_eval.store") and alias.asname:
                    modules.add(alias.asname)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not _private(node.attr):
            continue
        owner = node.value
        if isinstance(owner, ast.Name) and owner.id in ("self", "cls"):
            continue
        on_module = isinstance(owner, ast.Name) and owner.id in modules
        if node.attr in members or on_module:
            found.append(f"{shown}:{node.lineno} reads .{node.attr}")
    return found


def scan(root: Path) -> list[str]:
    members = private_members()
    found: list[str] = []
    for top in SCANNED:
        for path in _python_files(root / top):
            if STORE in path.parents:
                continue
            found += private_uses(path, members, str(path.relative_to(root)))
    return found


def test_no_caller_outside_the_store_touches_a_private_name() -> None:
    assert scan(ROOT) == []


def test_the_scan_names_each_private_use_by_file_and_line(tmp_path: Path) -> None:
    """The scan would catch what issue 34 found: ``store._guard()``, ``store._serialise``."""
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text(
        "from retrieval_eval.store import store as store_module\n"
        "from retrieval_eval.store.runs import _load_on\n"
        "def f(store, conn):\n"
        "    with store._guard():\n"
        "        store._serialise(conn)\n"
        "    self_like = store.runs._load\n"
        "    return store_module._chunks, self_like\n"
        "class Mine:\n"
        "    def _guard(self):\n"
        "        return self._guard, self._url\n",
        encoding="utf-8",
    )
    members = private_members() | {"_serialise"}
    found = private_uses(tmp_path / "tests" / "test_x.py", members, "tests/test_x.py")
    assert sorted(found) == sorted(
        [
            "tests/test_x.py:2 imports _load_on",
            "tests/test_x.py:4 reads ._guard",
            "tests/test_x.py:5 reads ._serialise",
            "tests/test_x.py:6 reads ._load",
            "tests/test_x.py:7 reads ._chunks",
        ]
    )


# -- the transaction ----------------------------------------------------------------------------


def _claims(store: Store) -> list[str]:
    with store.transaction() as conn:
        return list(conn.execute(select(eval_alert.c.run_key)).scalars())


def _claim(key: str) -> dict[str, object]:
    from datetime import UTC, datetime

    return {
        "run_key": key,
        "channel": "c",
        "kind": "k",
        "state": "sending",
        "updated_at": datetime.now(UTC),
    }


def test_a_transaction_commits_when_its_block_ends(store: Store) -> None:
    with store.transaction() as conn:
        conn.execute(insert(eval_alert).values(**_claim("kept")))
    assert _claims(store) == ["kept"]


def test_a_transaction_rolls_back_when_its_block_raises(store: Store) -> None:
    """Not a database error: it goes through as it is, and nothing of the block is kept."""
    with pytest.raises(KeyError, match="mine"), store.transaction() as conn:
        conn.execute(insert(eval_alert).values(**_claim("lost")))
        assert list(conn.execute(select(eval_alert.c.run_key)).scalars()) == ["lost"]
        raise KeyError("mine")
    assert _claims(store) == []


def test_a_refused_row_is_a_store_error_and_the_block_rolls_back(store: Store) -> None:
    refused = pytest.raises(StoreFailedError, match="cannot use the result store")
    with refused as caught, store.transaction() as conn:
        conn.execute(insert(eval_alert).values(**_claim("first")))
        conn.execute(insert(eval_alert).values(**_claim("first")))  # unique (key, channel)
    assert isinstance(caught.value, StoreUnavailableError)  # exit 3: a run would be spooled
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert _claims(store) == []


def _with_password(url: str) -> str:
    return make_url(url).set(password=PASSWORD).render_as_string(hide_password=False)


def test_a_driver_error_names_the_store_with_the_password_masked(pg_url: str) -> None:
    """PostgreSQL (trust: the password is not checked) echoes a value into its error: the
    password there, and in the URL, comes out masked."""
    from store.builders import pg_schema

    with (
        pg_schema(pg_url) as url,
        Store(_with_password(url)) as store,
        pytest.raises(StoreFailedError) as caught,
        store.transaction() as conn,
    ):
        conn.execute(text("SELECT CAST(:p AS integer)"), {"p": PASSWORD})
    message = str(caught.value)
    assert PASSWORD not in message
    assert "***" in message and "invalid input syntax" in message


def test_a_store_that_cannot_be_reached_fails_at_the_transaction_masked() -> None:
    """Nothing listens on port 1: the connection is refused when the transaction begins."""
    store = Store(f"postgresql://someone:{PASSWORD}@127.0.0.1:1/test?connect_timeout=2")
    unreachable = pytest.raises(StoreUnavailableError, match="cannot reach the result store")
    with unreachable as caught, store.transaction():
        pass  # pragma: no cover
    assert PASSWORD not in str(caught.value) and "someone:***@127.0.0.1:1" in str(caught.value)
    store.close()


def test_serialised_makes_a_second_writer_of_the_key_wait(store_url: str) -> None:
    """Two stores (as two processes): while one holds the key, the other's serialised
    transaction does not get through; once it commits, it does."""
    import threading

    with Store(store_url) as first, Store(store_url) as second:
        got = threading.Event()

        def other() -> None:
            with second.transaction() as conn:
                second.serialised(conn, "set", "retriever", "grader")
                got.set()

        with first.transaction() as conn:
            first.serialised(conn, "set", "retriever", "grader")
            thread = threading.Thread(target=other)
            thread.start()
            assert not got.wait(1.0)  # blocked behind our lock
        assert got.wait(10.0)
        thread.join()


def test_a_save_racing_an_uncommitted_save_of_its_run_returns_the_winners_id(
    store_url: str,
) -> None:
    """The loser's insert fails at a savepoint inside its one transaction (PostgreSQL: it waits
    on the unique run key, then reads the winner's id; SQLite: it waits for the write lock)."""
    import threading

    from store.builders import hits, make_run

    result = make_run(hits(2, 3), run_key="raced")
    with open_store(store_url) as first, open_store(store_url) as second:
        got: list[int] = []
        thread = threading.Thread(target=lambda: got.append(second.runs.save(result)))
        with first.transaction() as conn:
            won = first.runs.insert(conn, result, None)
            thread.start()
            thread.join(1.0)
            assert thread.is_alive()  # waiting on our uncommitted row (or lock)
        thread.join(10.0)
        assert got == [won]
        assert [r.id for r in first.history("demo.set", "bm25")] == [won]


def test_a_claim_racing_an_uncommitted_claim_loses(store_url: str) -> None:
    import threading

    with open_store(store_url) as first, open_store(store_url) as second:
        got: list[bool] = []
        thread = threading.Thread(target=lambda: got.append(second.alerts.claim("k", "c", "x")))
        with first.transaction() as conn:
            conn.execute(insert(eval_alert).values(**_claim("k")))
            thread.start()
            thread.join(1.0)
            assert thread.is_alive()
        thread.join(10.0)
        assert got == [False]
        assert second.alerts.state("k", "c") == "sending"

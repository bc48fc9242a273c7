"""A fresh store on each backend: every store test runs on SQLite and on PostgreSQL.

PostgreSQL tests get their own schema (selected with ``?options=-csearch_path=...``), dropped
afterwards, so they never see each other's rows or anything else in the database.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval_eval.store import Store, open_store
from store.builders import pg_schema


@pytest.fixture(params=["sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """An empty database URL on each backend."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'results.sqlite'}"
        return
    with pg_schema(request.getfixturevalue("pg_url")) as url:
        yield url


@pytest.fixture
def store(store_url: str) -> Iterator[Store]:
    opened = open_store(store_url)
    try:
        yield opened
    finally:
        opened.close()

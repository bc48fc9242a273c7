"""A long request value is echoed capped (~200 characters) in every error page and JSON answer."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.webui.app import create_app
from webui.fill import BM25, SET, Filled

LONG = "s" * 60_000


@pytest.fixture
def open_client(filled_sqlite: Filled) -> Iterator[TestClient]:
    app = create_app(filled_sqlite.url, require_auth=False)
    yield TestClient(app, raise_server_exceptions=False)
    app.state.store_source.close()


@pytest.mark.parametrize(
    ("path", "status"),
    [
        (f"/history?set={LONG}&retriever={BM25}", 404),
        (f"/compare?set={LONG}", 404),
        (f"/history?set={SET}&retriever={LONG}", 404),
        (f"/runs/1?hard_class={LONG}", 404),
    ],
)
def test_a_60000_character_parameter_is_not_echoed_whole(
    open_client: TestClient, path: str, status: int
) -> None:
    page = open_client.get(path)
    assert page.status_code == status, page.text[:300]
    assert LONG not in page.text and len(page.text) < 20_000
    assert "s" * 90 + "..." in page.text  # cut, and shown cut
    api = open_client.get("/api" + path)
    assert api.status_code == status
    detail = api.json()["detail"]
    assert len(detail) < 600 and "s" * 90 + "..." in detail, detail[:300]

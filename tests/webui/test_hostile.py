"""Hostile URLs never make the dashboard fail, and every answer carries the security headers.

Run ids outside the store's INTEGER range, malformed ids, bad query parameters and names holding a
NUL character (which PostgreSQL cannot compare) are 404 or 400, on SQLite and PostgreSQL; the
security headers are on every answer, errors included (404, 400, 405, 401 and the 500 of an
unexpected exception). The property test drives every route from the app's own OpenAPI schema.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from retrieval_eval.webui import views
from retrieval_eval.webui.app import CSP, create_app
from retrieval_eval.webui.routes import MAX_RUN_ID
from webui.fill import BM25, SET, Filled

BAD_IDS = [
    str(MAX_RUN_ID + 1),  # past PostgreSQL's INTEGER: "integer out of range", a 500 before
    str(2**63 - 1),
    str(2**63),  # past 64 bits: OverflowError in the driver, a 500 before
    str(2**64),
    "9" * 400,
    "0",
    "-1",
    str(-(2**63) - 1),
    "1.5",
    "1e3",
    "abc",
    "%00",
    "%F0%9F%92%A5",
]


@pytest.fixture
def open_app(filled: Filled) -> Iterator[FastAPI]:
    """The dashboard without auth (auth is covered in test_security.py) over a filled store."""
    app = create_app(filled.url, require_auth=False)
    yield app
    app.state.store_source.close()


@pytest.fixture
def open_client(open_app: FastAPI) -> TestClient:
    # unexpected exceptions answer 500 instead of reaching the test
    return TestClient(open_app, raise_server_exceptions=False)


def assert_secured(response: object) -> None:
    headers = response.headers  # type: ignore[attr-defined]
    assert headers["content-security-policy"] == CSP, (response, headers)
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["referrer-policy"] == "same-origin"


@pytest.mark.parametrize("run_id", BAD_IDS)
def test_a_run_id_naming_no_run_is_404_on_both_backends(
    open_client: TestClient, run_id: str
) -> None:
    page = open_client.get(f"/runs/{run_id}")
    assert page.status_code == 404, page.text[:300]
    assert page.headers["content-type"].startswith("text/html")
    assert "Not found" in page.text and "no stored run with id" in page.text
    assert_secured(page)
    api = open_client.get(f"/api/runs/{run_id}")
    assert api.status_code == 404, api.text[:300]
    assert api.json()["detail"].startswith("no stored run with id")
    assert_secured(api)


def test_the_largest_id_is_looked_up_and_the_first_stored_one_shown(
    open_client: TestClient, filled: Filled
) -> None:
    assert open_client.get(f"/api/runs/{MAX_RUN_ID}").status_code == 404
    first = filled.run_ids[BM25][0]
    assert open_client.get(f"/api/runs/{first}").json()["run"]["run_id"] == first


@pytest.mark.parametrize(
    ("path", "params"),
    [
        ("/history", {"set": "a\x00b", "retriever": BM25}),
        ("/api/history", {"set": SET, "retriever": "\x00"}),
        ("/api/history", {"set": SET, "retriever": BM25, "runs": str(2**64)}),
        ("/api/history", {"set": SET, "retriever": BM25, "runs": "0"}),
        ("/history", {"set": SET, "retriever": BM25, "dim": "x"}),
        ("/compare", {"set": SET, "a": "\x00"}),
        ("/api/compare", {"set": "\x00"}),
        ("/api/compare", {"set": SET, "b": BM25 + "\x00"}),
        ("/api/compare", {}),
        ("/runs/1", {"show": "x"}),
    ],
)
def test_a_malformed_query_is_400_on_both_backends(
    open_client: TestClient, path: str, params: dict[str, str]
) -> None:
    response = open_client.get(path, params=params)
    assert response.status_code == 400, response.text[:300]
    assert "bad request" in response.text
    assert_secured(response)


def test_hostile_but_well_formed_names_are_404(open_client: TestClient) -> None:
    for name in ("x" * 5000, "'; DROP TABLE eval_result; --", "\u202e\ud7ff\U0010ffff", "%"):
        response = open_client.get("/api/compare", params={"set": name})
        assert response.status_code == 404, response.text[:300]
        assert_secured(response)
    assert open_client.get("/api/overview").json()["pairs"]  # still there


def test_every_error_carries_the_security_headers(
    open_client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert_secured(open_client.get("/no-such-page"))  # 404 from the router
    wrong_method = open_client.post("/api/overview")
    assert wrong_method.status_code == 405 and wrong_method.headers["allow"] == "GET"
    assert_secured(wrong_method)

    def broken(*args: object) -> None:
        raise RuntimeError("secret internals")

    monkeypatch.setattr(views, "overview", broken)
    for path in ("/", "/api/overview"):
        response = open_client.get(path)
        assert response.status_code == 500
        assert "secret internals" not in response.text
        assert "server log" in response.text
        assert_secured(response)
    assert open_client.get("/api/overview").headers["content-type"] == "application/json"


def test_an_unexpected_exception_still_reaches_the_server_log(open_app: FastAPI) -> None:
    """The 500 page is an answer, not a way to swallow the error: the server still sees it."""

    def broken(*args: object) -> None:
        raise RuntimeError("boom")

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(views, "overview", broken)
        with pytest.raises(RuntimeError, match="boom"):
            TestClient(open_app).get("/api/overview")


def test_a_401_carries_the_security_headers(
    filled_sqlite: Filled, mint_token: Callable[..., str]
) -> None:
    # mint_token: Airflow's auth manager is configured, so the 401 is Airflow's verdict
    anonymous = TestClient(create_app(filled_sqlite.url))
    for path in ("/", "/api/overview", f"/runs/{MAX_RUN_ID + 1}"):
        response = anonymous.get(path)
        assert response.status_code == 401
        assert_secured(response)


def test_the_schema_describes_the_errors_and_no_422(open_app: FastAPI) -> None:
    schema = open_app.openapi()
    assert set(schema["paths"]["/review/judge"]) == {"post"}  # the one write
    assert "403" in schema["paths"]["/review/judge"]["post"]["responses"]
    for path, operations in schema["paths"].items():
        responses = (operations.get("get") or operations["post"])["responses"]
        assert "422" not in responses, path
        assert "503" in responses, path
        if "{run_id}" in path:
            assert "404" in responses, path
            run_id = operations["get"]["parameters"][0]["schema"]
            assert (run_id["minimum"], run_id["maximum"]) == (1, MAX_RUN_ID)
        if path.startswith("/api/"):
            answer = responses["200"]["content"]["application/json"]["schema"]
            assert answer["$ref"].startswith("#/components/schemas/"), path
    assert open_app.openapi() is schema  # built once
    # still not served: the docs pages would load scripts from the internet
    assert TestClient(open_app).get("/openapi.json").status_code == 404

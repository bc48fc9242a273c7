"""Only authenticated Airflow users get in; nothing stored can inject markup or script."""

from __future__ import annotations

import html as html_lib
from collections.abc import Callable

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.webui.app import create_app
from webui.fill import MARKUP, SCRIPT, SET, Filled

PAGES = ["/", f"/history?set={SET}&retriever=handbook_bm25", "/runs/1", f"/compare?set={SET}"]
APIS = ["/api/overview", f"/api/history?set={SET}&retriever=handbook_bm25", "/api/runs/1"]


@pytest.fixture
def anonymous(filled: Filled, mint_token: Callable[..., str]) -> TestClient:
    # mint_token: Airflow's auth manager is configured, so a 401 is Airflow's verdict, not a crash
    return TestClient(create_app(filled.url))


@pytest.mark.parametrize("path", PAGES + APIS)
def test_no_credential_is_401(anonymous: TestClient, path: str) -> None:
    response = anonymous.get(path)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == "Bearer"
    assert "handbook_bm25" not in response.text  # nothing from the store leaks


def test_401_page_for_people_and_json_for_scripts(anonymous: TestClient) -> None:
    page = anonymous.get("/")
    assert page.headers["content-type"].startswith("text/html")
    assert "Sign in" in page.text
    assert anonymous.get("/api/overview").json()["detail"].startswith("Sign in to Airflow")


def test_forged_expired_and_garbage_tokens_are_401(
    anonymous: TestClient, mint_token: Callable[..., str]
) -> None:
    good = mint_token()
    head, payload, signature = good.split(".")
    forged = f"{head}.{payload}.{signature[::-1]}"
    expired = mint_token(expires_in=-3600)  # beyond Airflow's leeway
    for bad in (forged, expired, "not-a-jwt"):
        response = anonymous.get("/api/overview", headers={"Authorization": f"Bearer {bad}"})
        assert response.status_code == 401, bad
    anonymous.cookies.set("_token", forged)
    assert anonymous.get("/api/overview").status_code == 401


def test_bearer_token_and_ui_cookie_are_accepted(
    anonymous: TestClient, mint_token: Callable[..., str]
) -> None:
    token = mint_token(username="ada")
    bearer = anonymous.get("/api/overview", headers={"Authorization": f"Bearer {token}"})
    assert bearer.status_code == 200 and bearer.json()["pairs"]
    anonymous.cookies.set("_token", token)  # what the Airflow UI sets after login
    assert anonymous.get("/").status_code == 200


def test_auth_can_only_be_switched_off_explicitly(filled: Filled) -> None:
    import inspect

    assert inspect.signature(create_app).parameters["require_auth"].default is True
    open_app = TestClient(create_app(filled.url, require_auth=False))
    assert open_app.get("/api/overview").status_code == 200


def test_stored_script_in_a_question_is_rendered_inert(client: TestClient, filled: Filled) -> None:
    first = filled.run_ids["handbook_bm25"][0]
    response = client.get(f"/runs/{first}")
    assert response.status_code == 200
    assert SCRIPT not in response.text
    assert html_lib.escape(SCRIPT, quote=False) in response.text
    assert "<script" not in response.text.lower()
    # the JSON API returns the stored text as data, unchanged (JSON, not HTML)
    api = client.get(f"/api/runs/{first}")
    assert api.headers["content-type"] == "application/json"
    question = next(q for q in api.json()["questions"] if q["id"] == filled.script_question_id)
    assert question["question"].startswith(SCRIPT)


@pytest.mark.parametrize("page", ["overview", "compare", "run", "history"])
def test_markup_in_a_retriever_name_is_escaped_everywhere(
    client: TestClient, filled: Filled, page: str
) -> None:
    run_id = filled.run_ids[MARKUP][0]
    path, params = {
        "overview": ("/", {}),
        "compare": ("/compare", {"set": SET, "a": MARKUP}),
        "run": (f"/runs/{run_id}", {}),
        "history": ("/history", {"set": SET, "retriever": MARKUP}),
    }[page]
    response = client.get(path, params=params)
    assert response.status_code == 200, response.text[:300]
    assert MARKUP not in response.text
    assert "<img" not in response.text
    assert "&lt;img src=x onerror=alert(1)&gt;" in response.text


def test_pages_forbid_scripts_and_framing_by_other_sites(client: TestClient) -> None:
    headers = client.get("/").headers
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src" not in policy
    assert "frame-ancestors 'self'" in policy
    assert headers["x-content-type-options"] == "nosniff"


def test_no_openapi_docs_that_would_load_scripts_from_the_internet(client: TestClient) -> None:
    for path in ("/docs", "/redoc", "/openapi.json"):
        assert client.get(path).status_code == 404

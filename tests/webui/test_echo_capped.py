"""A long request value is echoed capped (~200 characters) in every error page and JSON answer:
each route and each of its parameters, the 404s that name the value and the 400s that refuse it,
a repeated parameter's every value, and a path id."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from retrieval_eval.webui.app import create_app
from webui.fill import BM25, SET, Filled

LONG = "s" * 60_000
HALF = "h" * 30_000  # two of them fit one URL (httpx refuses URLs over 64 KiB)
OTHER = "m" * 30_000
CUT = "s" * 90 + "..."  # a value shown cut, and saying so

# (path, status, shown): ``shown`` is what of the value the message keeps (None: nothing)
NAMED = [
    (f"/history?set={LONG}&retriever={BM25}", 404, CUT),
    (f"/history?set={SET}&retriever={LONG}", 404, CUT),
    (f"/history?set={SET}&set={LONG}&retriever={BM25}", 404, CUT),
    (f"/compare?set={LONG}", 404, CUT),
    (f"/compare?set={SET}&r={LONG}&r={BM25}", 404, CUT),
    (f"/compare?set={SET}&r={HALF}&r={OTHER}", 404, "h" * 90 + "..."),
    (f"/compare?set={SET}&a={LONG}&b={BM25}", 404, CUT),
    (f"/compare?set={SET}&a={BM25}&b={LONG}", 404, CUT),
    (f"/runs/1?hard_class={LONG}", 404, CUT),
    (f"/drift?sample={LONG}&retriever={BM25}", 404, CUT),
    (f"/drift?sample=top&retriever={LONG}", 404, CUT),
    (f"/runs/{LONG}", 404, "s" * 40 + "…"),
    (f"/replays/{LONG}", 404, "s" * 40 + "…"),
]
REFUSED = [
    f"/history?set={SET}&retriever={BM25}&dim={LONG}",  # the page's only: its twin ignores it
    f"/history?set={SET}&retriever={BM25}&runs={LONG}",
    f"/runs/1?show={LONG}",
    f"/runs/1?form={LONG}",
    f"/runs/1?page={LONG}",
    f"/compare?set={SET}&r={BM25}&alpha={LONG}",
    f"/compare?set={SET}&r={BM25}&reference={LONG}%00",
    f"/replays/1?bucket={LONG}",
    f"/replays/1?page={LONG}",
]


@pytest.fixture(scope="module")
def open_client(filled_sqlite: Filled) -> Iterator[TestClient]:
    app = create_app(filled_sqlite.url, require_auth=False)
    yield TestClient(app, raise_server_exceptions=False)
    app.state.store_source.close()


def _name(path: str) -> str:
    """A test id: the route and the parameters, without their values."""
    route, _, query = path.partition("?")
    names = [part.split("=", 1)[0] for part in query.split("&")] if query else []
    return (route if len(route) < 30 else route[:12] + "<long>") + "?" + "&".join(names)


def _neither_whole(text: str) -> None:
    assert LONG not in text and HALF not in text and OTHER not in text
    assert len(text) < 20_000


@pytest.mark.parametrize(("path", "status", "shown"), NAMED, ids=[_name(p) for p, *_ in NAMED])
def test_a_named_value_is_shown_cut(
    open_client: TestClient, path: str, status: int, shown: str
) -> None:
    page = open_client.get(path)
    assert page.status_code == status, page.text[:300]
    _neither_whole(page.text)
    assert shown in page.text
    api = open_client.get("/api" + path)
    assert api.status_code == status
    detail = api.json()["detail"]
    _neither_whole(detail)
    assert len(detail) < 800 and shown in detail, detail[:300]


@pytest.mark.parametrize("path", REFUSED, ids=list(map(_name, REFUSED)))
def test_a_refused_value_is_a_400_that_does_not_echo_it(open_client: TestClient, path: str) -> None:
    page = open_client.get(path)
    assert page.status_code == 400, page.text[:300]
    _neither_whole(page.text)
    assert "s" * 50 not in page.text
    if "dim=" in path:
        return
    api = open_client.get("/api" + path)
    assert api.status_code == 400
    detail = api.json()["detail"]
    assert detail.startswith("bad request: ") and len(detail) < 300, detail[:300]


def test_a_message_echoing_a_value_in_another_form_is_still_cut() -> None:
    """A value a view echoes changed (stripped, lower-cased) escapes the replacement: the
    message itself is cut past MAX_MESSAGE."""
    from starlette.requests import Request

    from retrieval_eval.webui.handlers import MAX_MESSAGE, capped

    request = Request({"type": "http", "query_string": f"set={LONG}".encode(), "path_params": {}})
    echoed = f"no stored runs for set {LONG.upper()!r}"
    message = capped(request, echoed)
    assert len(message) < MAX_MESSAGE + 100 and LONG.upper() not in message
    assert message.startswith("no stored runs for set 'SSS")
    assert message.endswith(f"... ({len(echoed):,} characters)")

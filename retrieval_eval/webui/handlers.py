"""Every error as the client asked for it: JSON ``{"detail": ...}`` under ``/api``, else a page.

A bad path id (``/runs/abc``, ``/runs/0``, ``/runs/2**63``) names no run: a 404, like an unknown
one. Any other bad parameter is a 400, never FastAPI's 422. An unexpected exception is a 500 that
shows nothing of it (Starlette logs it). A request value a message echoes is shown through
:func:`~retrieval_eval.safety.limits.quote` (~200 characters of it), as the CLI shows input.
"""

from __future__ import annotations

from fastapi import FastAPI, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse
from starlette.exceptions import HTTPException

from retrieval_eval.errors import InvalidInputError, StoreUnavailableError, UnknownNameError
from retrieval_eval.safety.limits import MAX_QUOTED, quote, shorten
from retrieval_eval.webui.rendering import is_api, render

INTERNAL = "the dashboard failed on this request; the details are in the server log"


# longer than any message a handler writes (a few names and a known value or two); past it a
# message is cut, whatever it echoes
MAX_MESSAGE = 2_000


def capped(request: Request, message: str) -> str:
    """``message`` with every long query or path value of ``request`` it echoes cut to ~200
    characters (a 60,000-character ``set=`` is not sent back whole; a repeated parameter's
    every value), and the message itself cut past :data:`MAX_MESSAGE`."""
    values = [value for _, value in request.query_params.multi_items()]
    values += map(str, request.path_params.values())
    for value in sorted({v for v in values if len(v) > MAX_QUOTED}, key=len, reverse=True):
        message = message.replace(repr(value), quote(value)).replace(value, shorten(value))
    return shorten(message, MAX_MESSAGE)


def error_response(request: Request, status_code: int, message: str, **headers: str) -> Response:
    message = capped(request, message)
    if is_api(request):
        return JSONResponse({"detail": message}, status_code=status_code, headers=headers)
    response = render(
        request,
        "error.html",
        status_code,
        status_code=status_code,
        message=message,
        login_url=_login_url(request) if status_code == 401 else None,
        local_login=getattr(request.app.state, "local_auth", None) is not None,
    )
    response.headers.update(headers)
    return response


async def http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return error_response(request, exc.status_code, str(exc.detail), **(exc.headers or {}))


async def bad_request(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, RequestValidationError)
    for e in exc.errors():
        if tuple(e.get("loc", ()))[:1] == ("path",):
            shown = str(e.get("input", ""))
            shown = shown if len(shown) <= 40 else shown[:40] + "…"
            return error_response(request, 404, f"no stored run with id {shown}")
    problems = "; ".join(
        f"{'.'.join(str(part) for part in e.get('loc', ())[1:]) or 'request'}: {e.get('msg')}"
        for e in exc.errors()
    )
    return error_response(request, 400, f"bad request: {problems}")


async def not_found(request: Request, exc: Exception) -> Response:
    return error_response(request, 404, str(exc))


async def bad_input(request: Request, exc: Exception) -> Response:
    return error_response(request, 400, str(exc))


async def unavailable(request: Request, exc: Exception) -> Response:
    return error_response(request, 503, str(exc))  # the store masks passwords in these messages


async def internal_error(request: Request, exc: Exception) -> Response:
    try:
        return error_response(request, 500, INTERNAL)
    except Exception:  # rendering the error page failed too
        return PlainTextResponse(INTERNAL, status_code=500)


def install(app: FastAPI) -> None:
    """Register the handlers on ``app``."""
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(UnknownNameError, not_found)
    app.add_exception_handler(InvalidInputError, bad_input)
    app.add_exception_handler(StoreUnavailableError, unavailable)
    app.add_exception_handler(Exception, internal_error)


def _login_url(request: Request) -> str | None:
    if getattr(request.app.state, "local_auth", None) is not None:  # serve's own login
        return request.scope.get("root_path", "").rstrip("/") + "/login"
    from retrieval_eval.webui.auth import login_url

    return login_url()

"""The dashboard's FastAPI app: four HTML pages and the same data as JSON under ``/api``.

Pages (relative to wherever the app is mounted, ``/retrieval-eval`` inside Airflow):

- ``/``: every (set, retriever) pair; JSON ``/api/overview``
- ``/history?set=S&retriever=R[&dim=form|hard_class]``; JSON ``/api/history?set=S&retriever=R``
- ``/runs/{id}[?show=&form=&hard_class=&page=]``: one run, its questions filtered and paged
  (see :mod:`listing`); JSON ``/api/runs/{id}`` with the same parameters
- ``/compare?set=S&r=R1&r=R2[&r=R3...][&reference=R&alpha=0.05]``: the leaderboard of N
  retrievers (``a=R1&b=R2`` as before; see :mod:`compare_view`); JSON ``/api/compare?...``

Every route requires an authenticated Airflow user unless ``require_auth=False`` (local
development only). Every stored string reaches the page through Jinja2's autoescaping or
:mod:`charts`' escaping, and a Content-Security-Policy without any script source backs that up.

Hostile input: a run id that is not a whole number from 1 to 2**31-1 (the store's INTEGER ids)
names no run, so it is a 404 like an unknown one, before any query reaches the database; a bad
query parameter is a 400 (never FastAPI's 422); a name with a NUL character (which PostgreSQL
cannot even compare) is a 400. Every answer, errors and an unexpected 500 included, carries the
security headers: they are added outside Starlette's own error middleware. The OpenAPI schema is
not served (see ``create_app``) but ``app.openapi()`` describes every route, its JSON answers and
its error codes, for tests.

The app only reads the store. Airflow is imported only by :mod:`auth` (on a request) and by
:mod:`source` (when the config names an Airflow connection).
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Annotated, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Path, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import BaseModel, StringConstraints
from starlette.datastructures import MutableHeaders
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrieval_eval.errors import InvalidInputError, StoreUnavailableError, UnknownNameError

if TYPE_CHECKING:
    from types import ModuleType

URL_PREFIX = "/retrieval-eval"
SPARK_RUNS = 12  # runs in an overview sparkline
HISTORY_RUNS = 60  # runs on a history page unless ?runs= says otherwise
# No script source at all: even a stored string that slipped past escaping could not run.
CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; img-src 'self' data:; "
    "form-action 'self'; base-uri 'none'; frame-ancestors 'self'"
)
SECURITY_HEADERS = {
    "Content-Security-Policy": CSP,
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
# The store's ids are SQL INTEGERs: 32-bit on PostgreSQL (64-bit on SQLite, but counted up from 1
# they never get near). A larger id names no run, and querying it would fail: "integer out of
# range" on PostgreSQL, an OverflowError in either driver past 64 bits.
MAX_RUN_ID = 2**31 - 1
RunId = Annotated[int, Path(ge=1, le=MAX_RUN_ID, description="a stored run's id")]
# PostgreSQL cannot compare a string holding NUL: such a name is malformed, never just unknown
NAME_PATTERN = "^[^\\x00]*$"
Name = Annotated[str, StringConstraints(pattern=NAME_PATTERN)]  # one of a repeated parameter
# what each JSON route answers with, by the name of its model in views (see _Dashboard.openapi)
JSON_MODELS = {
    "/api/overview": "Overview",
    "/api/history": "History",
    "/api/runs/{run_id}": "RunView",
    "/api/compare": "Comparison",
}
_ERRORS = {
    400: "a malformed query parameter",
    401: "no signed-in Airflow user",
    404: "no such run, set or retriever",
    503: "the result store is unavailable",
}
_DETAIL = {"type": "object", "properties": {"detail": {"type": "string"}}, "required": ["detail"]}


@cache
def _modules() -> tuple[ModuleType, ModuleType]:
    """The view and page modules, imported on the first request: they pull in pandas and the
    store, and the plugin (hence this module) is imported by every Airflow process."""
    from retrieval_eval.webui import pages, views

    return pages, views


def _environment() -> Environment:
    pages, _ = _modules()
    env = Environment(
        loader=PackageLoader("retrieval_eval.webui", "templates"),
        autoescape=select_autoescape(["html", "css"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=pages.pct, pts=pages.pts, ms=pages.ms, when=pages.when, state=pages.state_label
    )
    return env


class _SecurityHeaders:
    """ASGI middleware adding :data:`SECURITY_HEADERS` (unless set) to every response it sees."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_secured(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                for name, value in SECURITY_HEADERS.items():
                    headers.setdefault(name, value)
            await send(message)

        await self.app(scope, receive, send_secured)


class _Dashboard(FastAPI):
    """FastAPI with the security headers outermost and an OpenAPI schema of the JSON answers."""

    def build_middleware_stack(self) -> ASGIApp:
        # outside Starlette's ServerErrorMiddleware (which user middleware never wraps), so the
        # 500 page of an unexpected exception carries the headers too
        return _SecurityHeaders(super().build_middleware_stack())

    def openapi(self) -> dict[str, Any]:
        """FastAPI's schema plus each JSON route's answer (its view model, built on first use:
        importing views at app creation would slow every Airflow process), without the 422s
        this app never answers."""
        if self.openapi_schema is None:
            from pydantic.json_schema import JsonSchemaMode, models_json_schema

            _, views = _modules()
            schema = super().openapi()
            mode: JsonSchemaMode = "serialization"  # what model_dump(mode="json") answers
            keys = {path: (getattr(views, name), mode) for path, name in JSON_MODELS.items()}
            refs, defs = models_json_schema(
                list(keys.values()), ref_template="#/components/schemas/{model}"
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            for unused in ("HTTPValidationError", "ValidationError"):
                components.pop(unused, None)
            components.update(defs.get("$defs", {}))
            for path, key in keys.items():
                answer = schema["paths"][path]["get"]["responses"]["200"]
                answer["content"] = {"application/json": {"schema": refs[key]}}
            for operations in schema["paths"].values():
                for operation in operations.values():
                    operation["responses"].pop("422", None)
            self.openapi_schema = schema
        return self.openapi_schema


def create_app(store_url: str | None = None, *, require_auth: bool = True) -> FastAPI:
    """The dashboard app over the store at ``store_url`` (default: the store the DAGs use).

    ``require_auth=False`` serves without Airflow's login: for local development only, never
    the default, never what the plugin mounts.
    """
    dependencies = []
    if require_auth:
        from retrieval_eval.webui.auth import require_airflow_user

        dependencies.append(Depends(require_airflow_user))
    # no /docs, /redoc or /openapi.json: they would load scripts from the internet, unprotected
    app = _Dashboard(
        title="retrieval-eval dashboard",
        dependencies=dependencies,
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    from retrieval_eval.webui.source import StoreSource

    source = StoreSource(store_url)
    app.state.store_source = source
    environment: list[Environment] = []  # built on first render

    def env() -> Environment:
        if not environment:
            environment.append(_environment())
        return environment[0]

    def render(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
        root = request.scope.get("root_path", "").rstrip("/")

        def href(path: str, **params: Any) -> str:
            query = {k: v for k, v in params.items() if v is not None}
            return root + path + ("?" + urlencode(query) if query else "")

        html = env().get_template(template).render(href=href, **context)
        return HTMLResponse(html, status_code=code)

    def errors(*codes: int, api: bool) -> dict[int | str, dict[str, Any]]:
        """The OpenAPI description of a route's error answers (JSON or an HTML page)."""
        media = (
            {"application/json": {"schema": _DETAIL}}
            if api
            else {"text/html": {"schema": {"type": "string"}}}
        )
        codes = (*codes, 401, 503) if require_auth else (*codes, 503)
        return {code: {"description": _ERRORS[code], "content": media} for code in sorted(codes)}

    def _is_api(request: Request) -> bool:
        root = request.scope.get("root_path", "").rstrip("/")
        path = request.url.path
        return path[len(root) :].startswith("/api/") if path.startswith(root) else False

    def _error(request: Request, status_code: int, message: str, **headers: str) -> Response:
        if _is_api(request):
            return JSONResponse({"detail": message}, status_code=status_code, headers=headers)
        response = render(
            request,
            "error.html",
            status_code,
            status_code=status_code,
            message=message,
            login_url=_login_url() if status_code == 401 else None,
        )
        response.headers.update(headers)
        return response

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        return _error(request, exc.status_code, str(exc.detail), **(exc.headers or {}))

    @app.exception_handler(RequestValidationError)
    async def bad_query(request: Request, exc: RequestValidationError) -> Response:
        for e in exc.errors():
            if tuple(e.get("loc", ()))[:1] == ("path",):  # /runs/abc, /runs/0, /runs/2**63
                shown = str(e.get("input", ""))
                shown = shown if len(shown) <= 40 else shown[:40] + "…"
                return _error(request, 404, f"no stored run with id {shown}")
        problems = "; ".join(
            f"{'.'.join(str(part) for part in e.get('loc', ())[1:]) or 'request'}: {e.get('msg')}"
            for e in exc.errors()
        )
        return _error(request, 400, f"bad request: {problems}")

    @app.exception_handler(UnknownNameError)
    async def not_found(request: Request, exc: UnknownNameError) -> Response:
        return _error(request, 404, str(exc))

    @app.exception_handler(InvalidInputError)
    async def bad_input(request: Request, exc: InvalidInputError) -> Response:
        return _error(request, 400, str(exc))

    @app.exception_handler(StoreUnavailableError)
    async def unavailable(request: Request, exc: StoreUnavailableError) -> Response:
        return _error(request, 503, str(exc))  # the store masks passwords in these messages

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> Response:
        # Starlette logs the exception and re-raises it after this answer; nothing of it is shown
        message = "the dashboard failed on this request; the details are in the server log"
        try:
            return _error(request, 500, message)
        except Exception:  # rendering the error page failed too
            return PlainTextResponse(message, status_code=500)

    def api(model: BaseModel) -> JSONResponse:
        return JSONResponse(model.model_dump(mode="json"))

    # -- overview ----------------------------------------------------------------------------

    @app.get("/api/overview", responses=errors(api=True))
    def api_overview() -> JSONResponse:
        _, views = _modules()
        return api(views.overview(source.store(), SPARK_RUNS))

    @app.get("/", response_class=HTMLResponse, responses=errors(api=False))
    def overview_page(request: Request) -> Any:
        pages, views = _modules()
        data = views.overview(source.store(), SPARK_RUNS)
        return render(request, "overview.html", data=data, rows=pages.overview_rows(data))

    # -- history -----------------------------------------------------------------------------

    @app.get("/api/history", responses=errors(400, 404, api=True))
    def api_history(
        set: str = Query(..., description="set identifier", pattern=NAME_PATTERN),
        retriever: str = Query(..., pattern=NAME_PATTERN),
        runs: int = Query(HISTORY_RUNS, ge=1, le=1000),
    ) -> JSONResponse:
        _, views = _modules()
        return api(views.history(source.store(), set, retriever, runs))

    @app.get("/history", response_class=HTMLResponse, responses=errors(400, 404, api=False))
    def history_page(
        request: Request,
        set: str = Query(..., pattern=NAME_PATTERN),
        retriever: str = Query(..., pattern=NAME_PATTERN),
        dim: str = Query("overall", pattern="^(overall|form|hard_class)$"),
        runs: int = Query(HISTORY_RUNS, ge=1, le=1000),
    ) -> Any:
        pages, views = _modules()
        data = views.history(source.store(), set, retriever, runs)
        return render(
            request, "history.html", data=data, dim=dim, charts=pages.history_charts(data, dim)
        )

    # -- one run -----------------------------------------------------------------------------

    @app.get("/api/runs/{run_id}", responses=errors(400, 404, api=True))
    def api_run(run_id: RunId, listed: dict[str, Any] = Depends(_run_listing)) -> JSONResponse:
        _, views = _modules()
        return api(views.run_view(source.store(), run_id, views.ListQuery(**listed)))

    @app.get("/runs/{run_id}", response_class=HTMLResponse, responses=errors(400, 404, api=False))
    def run_page(
        request: Request, run_id: RunId, listed: dict[str, Any] = Depends(_run_listing)
    ) -> Any:
        _, views = _modules()
        data = views.run_view(source.store(), run_id, views.ListQuery(**listed))
        return render(request, "run.html", data=data)

    # -- N retrievers on one set -------------------------------------------------------------

    @app.get("/api/compare", responses=errors(400, 404, api=True))
    def api_compare(query: dict[str, Any] = Depends(_compare_query)) -> JSONResponse:
        _, views = _modules()
        return api(views.compare(source.store(), **query))

    @app.get("/compare", response_class=HTMLResponse, responses=errors(400, 404, api=False))
    def compare_page(request: Request, query: dict[str, Any] = Depends(_compare_query)) -> Any:
        _, views = _modules()
        return render(request, "compare.html", data=views.compare(source.store(), **query))

    return app


# the run page's filters as the schema states them (listing.SHOW and QuestionForm, which a test
# compares with these: importing them here would slow every Airflow process); "" is "any"
SHOW_PATTERN = "^(all|misses|top1_misses|hits|errors|flipped|stale)$"
FORM_PATTERN = "^(|match|gap)$"


def _run_listing(
    show: str = Query("all", pattern=SHOW_PATTERN),
    form: str | None = Query(None, pattern=FORM_PATTERN),
    hard_class: str | None = Query(None, pattern=NAME_PATTERN),
    page: int = Query(1, ge=1, le=MAX_RUN_ID),
) -> dict[str, Any]:
    """The run page's list parameters (checked against the run by :mod:`listing`)."""
    # the filter form's "any" sends an empty value: no filter
    return {"show": show, "form": form or None, "hard_class": hard_class or None, "page": page}


def _compare_query(
    set: str = Query(..., description="set identifier", pattern=NAME_PATTERN),
    r: list[Name] = Query([], description="a retriever to compare (repeat for each)"),
    a: str | None = Query(None, pattern=NAME_PATTERN, description="the first retriever (as r)"),
    b: str | None = Query(None, pattern=NAME_PATTERN, description="the second retriever (as r)"),
    reference: str | None = Query(None, pattern=NAME_PATTERN),
    alpha: float = Query(0.05, gt=0, lt=1, description="significance level (Holm-corrected)"),
) -> dict[str, Any]:
    """The compare page's parameters (see :mod:`compare_view`); ``a``/``b`` come first."""
    # the page's form sends an empty reference for "the best" and may send empty names
    named = [name for name in (a, b, *r) if name]
    return {"set_identifier": set, "named": named, "reference": reference or None, "alpha": alpha}


def _login_url() -> str | None:
    from retrieval_eval.webui.auth import login_url

    return login_url()

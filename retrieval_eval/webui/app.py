"""The dashboard's FastAPI app: four HTML pages and the same data as JSON under ``/api``.

Pages (relative to wherever the app is mounted, ``/retrieval-eval`` inside Airflow):

- ``/``: every (set, retriever) pair; JSON ``/api/overview``
- ``/history?set=S&retriever=R[&dim=form|hard_class]``; JSON ``/api/history?set=S&retriever=R``
- ``/runs/{id}``: one run; JSON ``/api/runs/{id}``
- ``/compare?set=S&a=R1&b=R2``: two retrievers side by side; JSON ``/api/compare?...``

Every route requires an authenticated Airflow user unless ``require_auth=False`` (local
development only). Every stored string reaches the page through Jinja2's autoescaping or
:mod:`charts`' escaping, and a Content-Security-Policy without any script source backs that up.
The app only reads the store. Airflow is imported only by :mod:`auth` (on a request) and by
:mod:`source` (when the config names an Airflow connection).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import Depends, FastAPI, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from jinja2 import Environment, PackageLoader, select_autoescape
from pydantic import BaseModel
from starlette.exceptions import HTTPException

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
    app = FastAPI(
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

    @app.middleware("http")
    async def security_headers(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        response = await call_next(request)
        response.headers.setdefault("Content-Security-Policy", CSP)
        response.headers.setdefault("X-Content-Type-Options", "nosniff")
        response.headers.setdefault("Referrer-Policy", "same-origin")
        response.headers.setdefault("Cache-Control", "no-store")
        return response

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

    def api(model: BaseModel) -> JSONResponse:
        return JSONResponse(model.model_dump(mode="json"))

    # -- overview ----------------------------------------------------------------------------

    @app.get("/api/overview")
    def api_overview() -> JSONResponse:
        _, views = _modules()
        return api(views.overview(source.store(), SPARK_RUNS))

    @app.get("/", response_class=HTMLResponse)
    def overview_page(request: Request) -> Any:
        pages, views = _modules()
        data = views.overview(source.store(), SPARK_RUNS)
        return render(request, "overview.html", data=data, rows=pages.overview_rows(data))

    # -- history -----------------------------------------------------------------------------

    @app.get("/api/history")
    def api_history(
        set: str = Query(..., description="set identifier"),
        retriever: str = Query(...),
        runs: int = Query(HISTORY_RUNS, ge=1, le=1000),
    ) -> JSONResponse:
        _, views = _modules()
        return api(views.history(source.store(), set, retriever, runs))

    @app.get("/history", response_class=HTMLResponse)
    def history_page(
        request: Request,
        set: str = Query(...),
        retriever: str = Query(...),
        dim: str = Query("overall", pattern="^(overall|form|hard_class)$"),
        runs: int = Query(HISTORY_RUNS, ge=1, le=1000),
    ) -> Any:
        pages, views = _modules()
        data = views.history(source.store(), set, retriever, runs)
        return render(
            request, "history.html", data=data, dim=dim, charts=pages.history_charts(data, dim)
        )

    # -- one run -----------------------------------------------------------------------------

    @app.get("/api/runs/{run_id}")
    def api_run(run_id: int) -> JSONResponse:
        _, views = _modules()
        return api(views.run_view(source.store(), run_id))

    @app.get("/runs/{run_id}", response_class=HTMLResponse)
    def run_page(
        request: Request,
        run_id: int,
        show: str = Query("all", pattern="^(all|misses|errors)$"),
    ) -> Any:
        pages, views = _modules()
        data = views.run_view(source.store(), run_id)
        return render(
            request, "run.html", data=data, show=show, questions=pages.shown(data.questions, show)
        )

    # -- side by side ------------------------------------------------------------------------

    @app.get("/api/compare")
    def api_compare(
        set: str = Query(...), a: str | None = Query(None), b: str | None = Query(None)
    ) -> JSONResponse:
        _, views = _modules()
        return api(views.compare(source.store(), set, a, b))

    @app.get("/compare", response_class=HTMLResponse)
    def compare_page(
        request: Request,
        set: str = Query(...),
        a: str | None = Query(None),
        b: str | None = Query(None),
    ) -> Any:
        _, views = _modules()
        return render(request, "compare.html", data=views.compare(source.store(), set, a, b))

    return app


def _login_url() -> str | None:
    from retrieval_eval.webui.auth import login_url

    return login_url()

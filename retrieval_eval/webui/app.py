"""The dashboard's FastAPI app: four HTML pages and the same data as JSON under ``/api``.

Pages (relative to wherever the app is mounted, ``/retrieval-eval`` inside Airflow):

- ``/``: every (set, retriever) pair; JSON ``/api/overview``
- ``/history?set=S&retriever=R[&dim=form|hard_class]``; JSON ``/api/history?set=S&retriever=R``
- ``/runs/{id}[?show=&form=&hard_class=&page=]``: one run, its questions filtered and paged
  (see :mod:`listing`); JSON ``/api/runs/{id}`` with the same parameters
- ``/compare?set=S&r=R1&r=R2[&r=R3...][&reference=R&alpha=0.05]``: the leaderboard of N
  retrievers (``a=R1&b=R2`` as before; see :mod:`compare_view`); JSON ``/api/compare?...``
- ``/review?set=S[&page=N]``: the set's review queue (see :mod:`review_view`); JSON
  ``/api/review?set=S``; its grade buttons ``POST /review/judge``, the app's one write

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

The app is assembled from :mod:`.routes` (the routes, two routers), :mod:`.handlers` (the
error answers) and :mod:`.rendering` (templates). The app only reads the store, but for
the review queue's judgments: a POST from a user Airflow lets edit, with the page's CSRF token. Airflow is imported only by :mod:`auth` (on a request) and by
:mod:`source` (when the config names an Airflow connection).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI
from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from retrieval_eval.reports.links import DASHBOARD_PREFIX
from retrieval_eval.webui import handlers, routes
from retrieval_eval.webui.rendering import modules

if TYPE_CHECKING:
    from retrieval_eval.webui.local_auth import LocalAuth

URL_PREFIX = DASHBOARD_PREFIX
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
# what each JSON route answers with, by the name of its model in views (see _Dashboard.openapi)
JSON_MODELS = {
    "/api/overview": "Overview",
    "/api/history": "History",
    "/api/runs/{run_id}": "RunView",
    "/api/compare": "Comparison",
    "/api/drift": "Drift",
    "/api/replays/{replay_id}": "ReplayPage",
    "/api/review": "ReviewQueue",
}


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

            _, views = modules()
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


def create_app(
    store_url: str | None = None,
    *,
    require_auth: bool = True,
    airflow_url: str | None = None,
    config_path: str | Path | None = None,
    local_auth: LocalAuth | None = None,
) -> FastAPI:
    """The dashboard app over the store at ``store_url`` (default: the store the DAGs use).

    ``require_auth=False`` serves without Airflow's login: for local development only, never
    the default, never what the plugin mounts. ``airflow_url`` is the Airflow UI a run page
    links its DAG run to; None: the Airflow that mounts the app, and no link outside one.
    ``config_path``: the config whose sets and retrievers the review queue reads (None: found
    as everywhere, ``$RETRIEVAL_EVAL_CONFIG`` or ``retrieval_eval.yaml`` in the working folder).
    ``local_auth``: ``retrieval-eval serve``'s own login (:mod:`.local_auth`) instead of
    Airflow's: every route but ``/login`` and ``/logout`` needs its user.
    """
    dependencies = []
    if local_auth is not None:
        pass  # on the routers below, so the login form itself needs no user
    elif require_auth:
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
    from retrieval_eval.webui.review_view import ReviewSource
    from retrieval_eval.webui.source import StoreSource

    app.state.store_source = StoreSource(store_url)
    app.state.review_source = ReviewSource(config_path)
    app.state.airflow_url = airflow_url
    app.state.local_auth = local_auth
    handlers.install(app)
    always = (401, 503) if require_auth or local_auth else (503,)  # what any route may answer
    guarded = []
    if local_auth is not None:
        from retrieval_eval.webui.local_auth import require_local_user, router

        guarded.append(Depends(require_local_user))
        app.include_router(router)
    app.include_router(routes.api, dependencies=guarded, responses=routes.errors(*always, api=True))
    app.include_router(
        routes.pages, dependencies=guarded, responses=routes.errors(*always, api=False)
    )
    return app

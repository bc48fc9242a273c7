"""Pages from templates: the Jinja2 environment (built on the first page) and ``render``.

The view and page modules are imported on the first request, not with the app: they pull in
pandas and the store, and the plugin (hence the app module) is imported by every Airflow process.
"""

from __future__ import annotations

from functools import cache
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, PackageLoader, select_autoescape

from retrieval_eval.formats import numbers

if TYPE_CHECKING:
    from types import ModuleType


@cache
def modules() -> tuple[ModuleType, ModuleType]:
    """The page helpers and the views, imported on first use."""
    from retrieval_eval.webui import pages, views

    return pages, views


@cache
def environment() -> Environment:
    pages, _ = modules()
    env = Environment(
        loader=PackageLoader("retrieval_eval.webui", "templates"),
        autoescape=select_autoescape(["html", "css"], default=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters.update(
        pct=numbers.pct,
        pts=numbers.pts,
        ms=numbers.ms,
        decimal=numbers.decimal,
        signed_points=numbers.signed_points,
        when=pages.when,
        state=pages.state_label,
        breakable=pages.breakable,
    )
    return env


def render(request: Request, template: str, code: int = 200, **context: Any) -> HTMLResponse:
    """``template`` with ``context`` and an ``href(path, **params)`` that keeps the mount point
    (``/retrieval-eval`` inside Airflow) in every link."""
    root = request.scope.get("root_path", "").rstrip("/")

    def href(path: str, **params: Any) -> str:
        query = {k: v for k, v in params.items() if v is not None}
        return root + path + ("?" + urlencode(query) if query else "")

    local_user = getattr(request.state, "local_user", None)  # serve's own login: a sign-out
    html = environment().get_template(template).render(href=href, local_user=local_user, **context)
    return HTMLResponse(html, status_code=code)


def is_api(request: Request) -> bool:
    """Whether the request is for a JSON route (``/api/...`` below the mount point)."""
    root = request.scope.get("root_path", "").rstrip("/")
    path = request.url.path
    return path[len(root) :].startswith("/api/") if path.startswith(root) else False

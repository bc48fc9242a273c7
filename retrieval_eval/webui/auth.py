"""Who may see the dashboard: an authenticated Airflow user, checked by Airflow's own code.

Airflow does not protect plugin apps by itself, so every route of the dashboard depends on
:func:`require_airflow_user`, which delegates to ``airflow.api_fastapi.core_api.security.get_user``:
it accepts ``Authorization: Bearer <jwt>`` and falls back to the UI's ``_token`` cookie, so a page
opened from the Airflow UI after login is authenticated.

Edge cases:

- No credential, an expired token, a forged or revoked one: all answer 401 (Airflow itself answers
  403 for an invalid token; to a reader of the dashboard it is the same "sign in first").
- Outside the Airflow API server (the dashboard served on its own with auth on), the auth manager
  is initialised on first use from Airflow's configuration.
- Airflow is imported here lazily, on the first request, never at import time.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from fastapi import HTTPException, Request, status

log = logging.getLogger(__name__)
_init_lock = threading.Lock()

UNAUTHENTICATED = "Sign in to Airflow first: this dashboard needs an authenticated Airflow user."


def _ensure_auth_manager() -> None:
    """Initialise Airflow's auth manager when nothing has (a stand-alone dashboard process)."""
    from airflow.api_fastapi import app as airflow_app

    try:
        airflow_app.get_auth_manager()
    except RuntimeError:
        with _init_lock:
            try:
                airflow_app.get_auth_manager()
            except RuntimeError:
                airflow_app.init_auth_manager()


async def require_airflow_user(request: Request) -> Any:
    """FastAPI dependency: the Airflow user behind the request, or 401."""
    from airflow.api_fastapi.core_api.security import bearer_scheme, get_user

    _ensure_auth_manager()
    credentials = await bearer_scheme(request)
    try:
        user = await get_user(request, None, credentials)
    except HTTPException as exc:
        if exc.status_code in (status.HTTP_401_UNAUTHORIZED, status.HTTP_403_FORBIDDEN):
            raise HTTPException(
                status_code=status.HTTP_401_UNAUTHORIZED,
                detail=UNAUTHENTICATED,
                headers={"WWW-Authenticate": "Bearer"},
            ) from None
        raise
    request.state.airflow_user = user
    return user


def login_url() -> str | None:
    """Where Airflow's auth manager signs people in, when it can tell (for the 401 page)."""
    try:
        from airflow.api_fastapi.app import get_auth_manager

        return str(get_auth_manager().get_url_login())
    except Exception:  # the link is a convenience; the 401 stands without it
        log.debug("no login URL available", exc_info=True)
        return None

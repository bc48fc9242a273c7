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

Writing (the review queue's grades, the only write) needs more: :func:`may_edit` asks the auth
manager for edit rights on DAGs, and :func:`check_csrf` the form's token (:func:`csrf_token`).

Served on its own with a login of its own (:mod:`retrieval_eval.webui.local_auth`), the same
functions answer for its user (``request.state.local_user``): a rater or admin may edit, and
CSRF tokens are signed with that server's key.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
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
    request.state.airflow_credential = (
        credentials.credentials if credentials is not None else _cookie_token(request)
    )
    return user


def _cookie_token(request: Request) -> str:
    from airflow.api_fastapi.auth.managers.base_auth_manager import COOKIE_NAME_JWT_TOKEN

    return request.cookies.get(COOKIE_NAME_JWT_TOKEN, "")


# -- the one write path: grading review candidates ------------------------------------------------


def _local(request: Request) -> Any:
    """The stand-alone dashboard's signed-in user (:mod:`.local_auth`), or None."""
    return getattr(request.state, "local_user", None)


def user_name(request: Request) -> str | None:
    """The signed-in user's name (None without auth: ``require_auth=False``)."""
    if (local := _local(request)) is not None:
        return str(local.name)
    user = getattr(request.state, "airflow_user", None)
    return None if user is None else str(user.get_name())


def may_edit(request: Request) -> bool:
    """Whether Airflow's auth manager lets the signed-in user edit DAGs (``PUT`` on the DAG
    resource, as editing a DAG's runs needs): the dashboard shows what the evaluation DAGs
    record, reading needs a signed-in user, writing judgments needs edit rights on them. The
    simple auth manager grants it from the ``user`` role up; FAB from "can edit on DAGs". No
    signed-in user (auth switched off) may never edit. A local login's rater or admin may."""
    if (local := _local(request)) is not None:
        return bool(local.may_grade())
    user = getattr(request.state, "airflow_user", None)
    if user is None:
        return False
    from airflow.api_fastapi.app import get_auth_manager

    return bool(get_auth_manager().is_authorized_dag(method="PUT", user=user))


def _csrf_key() -> bytes:
    """The key CSRF tokens are signed with: derived from Airflow's JWT secret, which every API
    server process shares (a token from one worker passes on another), else per process."""
    global _key
    with _init_lock:
        if _key is None:
            from airflow.configuration import conf

            secret = conf.get("api_auth", "jwt_secret", fallback="") or ""
            _key = (
                hashlib.sha256(b"retrieval-eval csrf\x00" + secret.encode()).digest()
                if secret
                else secrets.token_bytes(32)
            )
        return _key


_key: bytes | None = None


def csrf_token(request: Request) -> str:
    """The review form's CSRF token: an HMAC of the user and the session's credential (the
    Airflow JWT), so it is per user and per sign-in, and a page of another site cannot know it."""
    if _local(request) is not None:
        local = request.app.state.local_auth
        key, credential = local.key, local.credential(request)
    else:
        key, credential = _csrf_key(), getattr(request.state, "airflow_credential", "") or ""
    message = f"{user_name(request)}\x1f{credential}".encode()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def check_csrf(request: Request, given: str | None) -> bool:
    """Whether ``given`` is this session's token (compared in constant time)."""
    if not given or user_name(request) is None:
        return False
    return hmac.compare_digest(given.encode(), csrf_token(request).encode())


def login_url() -> str | None:
    """Where Airflow's auth manager signs people in, when it can tell (for the 401 page)."""
    try:
        from airflow.api_fastapi.app import get_auth_manager

        return str(get_auth_manager().get_url_login())
    except Exception:  # the link is a convenience; the 401 stands without it
        log.debug("no login URL available", exc_info=True)
        return None

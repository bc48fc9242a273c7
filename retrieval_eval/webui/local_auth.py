"""``retrieval-eval serve``'s own login, so labelling does not need Airflow.

Two ways in, either or both:

- **a users file** (:mod:`retrieval_eval.safety.users`: names, roles, scrypt hashes): ``GET
  /login`` shows a form, ``POST /login`` checks the password and sets a session cookie
  (``HttpOnly``, ``SameSite=Lax``, ``Secure`` over HTTPS, :data:`SESSION_HOURS` long) signed
  with an HMAC key made when the server starts (a restart signs everyone out); ``POST /logout``
  ends it. The user's role is read from the file on every request (the file is read again when
  it changes), so a user removed or demoted loses the rights at once.
- **a trusted proxy header** (``--trusted-user-header X-Forwarded-User``): the name a proxy in
  front already authenticated, believed only from the proxy addresses given
  (``--trusted-proxy``, default the loopback addresses); from any other address the header is
  ignored. Such a user's role is the users file's when listed there, else ``viewer``.

Viewers read; raters and admins also grade the review queue, as themselves. Unauthenticated:
a page is a redirect to the login form (back to the page after), ``/api`` a 401. A wrong name
or password says only that (no hint which), and an unknown name costs the same scrypt time.

Guessing is throttled (:class:`LoginThrottle`): after :data:`FAILURES_PER_NAME` failed sign-ins
of one user name, or :data:`FAILURES_PER_ADDRESS` from one client address, within
:data:`WINDOW_S` seconds, ``POST /login`` answers 429 with ``Retry-After`` and checks no
password until the oldest of those failures leaves the window. A name counts whether or not it
is a user, and the answer is the same: the limit says nothing about who exists.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import ipaddress
import math
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Form, HTTPException, Request, status
from fastapi.responses import RedirectResponse, Response

from retrieval_eval.safety.users import User, authenticate, read_users
from retrieval_eval.webui.rendering import is_api, render

COOKIE = "retrieval_eval_session"
SESSION_HOURS = 12
LOOPBACK = ("127.0.0.1", "::1")
MAX_NAME = 200  # a proxy's user name longer than this is no name
FAILURES_PER_NAME = 5  # failed sign-ins of one user name within WINDOW_S, then 429
FAILURES_PER_ADDRESS = 20  # ... from one client address (an office behind one NAT: more)
WINDOW_S = 300  # seconds a failed sign-in counts
MAX_TRACKED = 10_000  # names and addresses remembered at once: guessing cannot fill memory


class LoginThrottle:
    """Failed sign-ins per user name and per client address in a sliding window (see the
    module); thread-safe. Names are counted as given, users or not, cut to :data:`MAX_NAME`."""

    def __init__(
        self,
        per_name: int = FAILURES_PER_NAME,
        per_address: int = FAILURES_PER_ADDRESS,
        window_s: float = WINDOW_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.limits = {"name": per_name, "address": per_address}
        self.window_s = window_s
        self.clock = clock
        self._lock = threading.Lock()
        self._failures: dict[tuple[str, str], deque[float]] = {}

    def _keys(self, name: str, address: str) -> list[tuple[str, str]]:
        return [("name", name[:MAX_NAME]), ("address", address)]

    def _recent(self, key: tuple[str, str], now: float) -> deque[float]:
        times = self._failures.get(key, deque())
        while times and times[0] <= now - self.window_s:
            times.popleft()
        if not times:
            self._failures.pop(key, None)
        return times

    def retry_after(self, name: str, address: str) -> int | None:
        """Seconds until this name and address may try again, or None when they may now."""
        now = self.clock()
        wait = 0.0
        with self._lock:
            for key in self._keys(name, address):
                times = self._recent(key, now)
                if len(times) >= self.limits[key[0]]:
                    # the failure that must leave the window for one more try to be allowed
                    oldest = times[len(times) - self.limits[key[0]]]
                    wait = max(wait, oldest + self.window_s - now)
        return max(1, math.ceil(wait)) if wait > 0 else None

    def failed(self, name: str, address: str) -> None:
        now = self.clock()
        with self._lock:
            for key in self._keys(name, address):
                self._recent(key, now)
                self._failures.setdefault(key, deque()).append(now)
            if len(self._failures) > MAX_TRACKED:  # forget whoever failed longest ago
                for key in sorted(self._failures, key=lambda k: self._failures[k][-1])[
                    : len(self._failures) - MAX_TRACKED
                ]:
                    del self._failures[key]

    def succeeded(self, name: str) -> None:
        """A right password clears its name's failures (not its address's)."""
        with self._lock:
            self._failures.pop(("name", name[:MAX_NAME]), None)


class LocalAuth:
    """Who is behind a request of the stand-alone dashboard (see the module); thread-safe."""

    def __init__(
        self,
        users_file: Path | None,
        *,
        trusted_header: str | None = None,
        trusted_proxies: Sequence[str] = LOOPBACK,
    ) -> None:
        self.users_file = users_file
        self.trusted_header = trusted_header
        self.trusted_proxies = [ipaddress.ip_network(p, strict=False) for p in trusted_proxies]
        self.key = secrets.token_bytes(32)
        self.throttle = LoginThrottle()
        self._lock = threading.Lock()
        self._users: dict[str, User] = {}
        self._stamp: tuple[int, int] | None = None
        self.users()  # a bad file fails at start, not on the first request

    def users(self) -> dict[str, User]:
        """The users file as it is now (read again when its size or time changes)."""
        if self.users_file is None:
            return {}
        try:
            info = self.users_file.stat()
            stamp = (info.st_mtime_ns, info.st_size)
        except FileNotFoundError:
            stamp = None
        with self._lock:
            if stamp != self._stamp or stamp is None:
                self._users = read_users(self.users_file) if stamp is not None else {}
                self._stamp = stamp
            return self._users

    # -- the session cookie: name|expiry|nonce, signed ------------------------------------------

    def _sign(self, payload: bytes) -> str:
        return hmac.new(self.key, payload, hashlib.sha256).hexdigest()

    def session(self, name: str) -> str:
        expiry = int(time.time()) + SESSION_HOURS * 3600
        payload = f"{name}|{expiry}|{secrets.token_hex(8)}".encode()
        return base64.urlsafe_b64encode(payload).decode() + "." + self._sign(payload)

    def _session_name(self, value: str) -> str | None:
        try:
            encoded, signature = value.rsplit(".", 1)
            payload = base64.urlsafe_b64decode(encoded.encode())
        except ValueError:
            return None
        if not hmac.compare_digest(signature, self._sign(payload)):
            return None
        name, expiry, _ = payload.decode().split("|")
        return name if int(expiry) > time.time() else None

    # -- who is it -------------------------------------------------------------------------------

    def _from_proxy(self, request: Request) -> bool:
        host = request.client.host if request.client else None
        try:
            address = ipaddress.ip_address(host or "")
        except ValueError:
            return False
        return any(address in network for network in self.trusted_proxies)

    def identify(self, request: Request) -> User | None:
        """The user behind ``request``, or None."""
        users = self.users()
        if self.trusted_header is not None and self._from_proxy(request):
            forwarded = request.headers.get(self.trusted_header, "").strip()
            if forwarded and len(forwarded) <= MAX_NAME:
                listed = users.get(forwarded)
                return User(forwarded, listed.role if listed else "viewer")
        value = request.cookies.get(COOKIE)
        if value:
            name = self._session_name(value)
            if name is not None and name in users:
                return users[name]
        return None

    def credential(self, request: Request) -> str:
        """What a CSRF token is bound to: the session cookie, else the proxy's header."""
        return (
            request.cookies.get(COOKIE)
            or f"proxy:{request.headers.get(self.trusted_header or '', '')}"
        )


def require_local_user(request: Request) -> User:
    """FastAPI dependency of every dashboard route under a local login."""
    local: LocalAuth = request.app.state.local_auth
    user = local.identify(request)
    if user is None:
        if request.method == "GET" and not is_api(request):
            root = request.scope.get("root_path", "").rstrip("/")
            target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
            raise HTTPException(
                status.HTTP_303_SEE_OTHER,
                "sign in first",
                headers={"Location": f"{root}/login?{urlencode({'next': target})}"},
            )
        raise HTTPException(status.HTTP_401_UNAUTHORIZED, "sign in first: POST /login")
    request.state.local_user = user
    return user


router = APIRouter()


def _safe_next(target: str | None) -> str:
    """Only a path of this site (never ``//host`` or a URL): an open redirect otherwise."""
    if not target or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return "/"
    return target


@router.get("/login", include_in_schema=False)
def login_form(request: Request, next: str | None = None) -> Any:
    return render(request, "login.html", next=_safe_next(next), message=None)


@router.post("/login", include_in_schema=False)
def login(
    request: Request,
    username: str = Form(""),
    password: str = Form(""),
    next: str = Form("/"),
) -> Response:
    local: LocalAuth = request.app.state.local_auth
    address = request.client.host if request.client else ""
    wait = local.throttle.retry_after(username, address)
    if wait is not None:
        refused = render(request, "login.html", 429, next=_safe_next(next),
                         message=f"too many failed sign-ins: try again in {wait} s")  # fmt: skip
        refused.headers["Retry-After"] = str(wait)
        return refused
    user = authenticate(local.users(), username, password) if username and password else None
    if user is None:
        local.throttle.failed(username, address)
        return render(request, "login.html", 401, next=_safe_next(next),
                      message="wrong name or password")  # fmt: skip
    local.throttle.succeeded(user.name)
    root = request.scope.get("root_path", "").rstrip("/")
    response = RedirectResponse(root + _safe_next(next), status.HTTP_303_SEE_OTHER)
    response.set_cookie(
        COOKIE,
        local.session(user.name),
        max_age=SESSION_HOURS * 3600,
        httponly=True,
        samesite="lax",
        secure=request.url.scheme == "https",
        path=root or "/",
    )
    return response


@router.post("/logout", include_in_schema=False)
def logout(request: Request) -> Response:
    root = request.scope.get("root_path", "").rstrip("/")
    response = RedirectResponse(f"{root}/login", status.HTTP_303_SEE_OTHER)
    response.delete_cookie(COOKIE, path=root or "/")
    return response

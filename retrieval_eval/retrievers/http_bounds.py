"""A total deadline and a size cap for one outbound HTTP call, over urllib3.

urllib3's timeouts are per socket operation: a server that sends one byte a second (headers or
body) never trips a 5-second read timeout, and a body is held in memory whatever its size. Here
every receive of a connection made by :func:`bounded_pool_manager` waits at most until the
calling thread's deadline (:func:`deadline`), so connect, headers and body together end by it
(a receive past it raises ``TimeoutError``, which urllib3 reports as a read timeout); and
:func:`read_capped` reads a body in chunks, refusing it once it exceeds a cap.
"""

from __future__ import annotations

import contextlib
import io
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

_CHUNK = 64 * 1024
_local = threading.local()


class TooLargeError(ValueError):
    """A body over the cap; ``cap`` is the limit in bytes."""

    def __init__(self, cap: int) -> None:
        super().__init__(f"the answer is larger than {cap:,} bytes")
        self.cap = cap


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[float]:
    """Bound every receive of this thread's bounded connections to ``seconds`` from now; yields
    the monotonic time it ends at."""
    previous = getattr(_local, "at", None)
    _local.at = end = time.monotonic() + seconds
    try:
        yield end
    finally:
        _local.at = previous


class _DeadlineSocket:
    """A socket whose receives never wait past the calling thread's deadline."""

    def __init__(self, sock: Any) -> None:
        self._sock = sock
        self._per_read = sock.gettimeout()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)

    def settimeout(self, value: float | None) -> None:
        self._per_read = value
        self._sock.settimeout(value)

    def _arm(self) -> None:
        end = getattr(_local, "at", None)
        if end is None:
            return
        left = end - time.monotonic()
        if left <= 0:
            raise TimeoutError("the call's deadline passed")
        self._sock.settimeout(left if self._per_read is None else min(left, self._per_read))

    def recv(self, *args: Any) -> bytes:
        self._arm()
        return self._sock.recv(*args)  # type: ignore[no-any-return]

    def recv_into(self, *args: Any) -> int:
        self._arm()
        return self._sock.recv_into(*args)  # type: ignore[no-any-return]

    def makefile(self, mode: str = "r", buffering: int | None = None, **_: Any) -> Any:
        # what http.client reads headers and body from: it must read through this object
        raw = socket.SocketIO(self, "rb")  # type: ignore[arg-type]
        self._sock._io_refs += 1  # as socket.makefile counts it, so close() waits for it
        return io.BufferedReader(raw, buffering or io.DEFAULT_BUFFER_SIZE)


class _Connection(HTTPConnection):
    def connect(self) -> None:
        super().connect()
        self.sock = _DeadlineSocket(self.sock)  # type: ignore[assignment]


class _TlsConnection(HTTPSConnection):
    def connect(self) -> None:
        super().connect()
        self.sock = _DeadlineSocket(self.sock)  # type: ignore[assignment]


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TlsPool(HTTPSConnectionPool):
    ConnectionCls = _TlsConnection


def bounded_pool_manager(proxy_url: str | None = None, **kwargs: Any) -> urllib3.PoolManager:
    """A ``PoolManager`` (a ``ProxyManager`` through ``proxy_url``) whose connections honour
    :func:`deadline`."""
    manager = (
        urllib3.ProxyManager(proxy_url, **kwargs) if proxy_url else urllib3.PoolManager(**kwargs)
    )
    manager.pool_classes_by_scheme = {"http": _Pool, "https": _TlsPool}
    return manager


def read_capped(response: urllib3.BaseHTTPResponse, cap: int) -> bytes:
    """The body of a ``preload_content=False`` response, read in chunks; TooLargeError (and the
    connection dropped) once it holds more than ``cap`` bytes."""
    parts: list[bytes] = []
    size = 0
    try:
        while chunk := response.read(min(_CHUNK, cap + 1 - size) or 1):
            size += len(chunk)
            if size > cap:
                raise TooLargeError(cap)
            parts.append(chunk)
    except BaseException:
        response.close()
        raise
    response.release_conn()
    return b"".join(parts)

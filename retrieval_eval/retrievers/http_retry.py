"""The ``http`` adapter's retries: urllib3's ``Retry``, with the adapter's schedule and warnings.

- Retried: timeouts, connection errors, 5xx answers and 429 (too many requests); other 4xx
  answers are not. GET and POST alike: a search or a lookup only reads, so it is idempotent.
- Delays: ``backoff_s`` × 2^n before retry n (0.5, 1, 2 s by default). urllib3's own schedule
  (``get_backoff_time``) makes the first retry immediate; this keeps the documented one.
- ``Retry-After`` (seconds or an HTTP date) on a retried answer, typically a 503 or 429,
  replaces the backoff, capped at the adapter's ``timeout_s`` so that a call still ends in
  bounded time (``bounds_own_time``); an unreadable ``Retry-After`` is ignored, the backoff used.
  Unlike urllib3's default, a 413 with ``Retry-After`` is not retried: too large stays too large.
- One warning per failed attempt that will be retried, naming the attempt, the redacted problem
  and the delay. The last failure is not logged: it becomes the error.
- Redirects are not followed: a 3xx answer is returned as it is, as before urllib3 retried.
"""

from __future__ import annotations

import logging
from typing import Any

import urllib3
from urllib3.exceptions import InvalidHeader

from retrieval_eval.safety.redaction import quote_body, redact

logger = logging.getLogger("retrieval_eval.retrievers.http")

# 429 is a 4xx, but "come back later": a mature client waits (Retry-After) and asks again
RETRIED_STATUSES = frozenset({429, *range(500, 600)})
_SNIPPET_BYTES = 4096


class AdapterRetry(urllib3.util.Retry):
    """``Retry`` that keeps the adapter's backoff schedule and logs each retried failure."""

    # 413 dropped: a payload too large stays too large, whatever Retry-After says
    RETRY_AFTER_STATUS_CODES = frozenset({429, 503})

    def __init__(self, *args: Any, identifier: str = "", timeout_s: float = 0.0, **kw: Any):
        super().__init__(*args, **kw)
        self.identifier = identifier
        self.timeout_s = timeout_s

    @classmethod
    def for_adapter(
        cls, identifier: str, *, retries: int, backoff_s: float, timeout_s: float
    ) -> AdapterRetry:
        return cls(
            total=retries,
            redirect=False,  # a 3xx is returned, not followed
            allowed_methods=frozenset({"GET", "POST"}),  # searches and lookups only read
            status_forcelist=RETRIED_STATUSES,
            backoff_factor=backoff_s,
            backoff_max=float("inf"),  # the schedule is the documented one, bounded by retries
            retry_after_max=timeout_s,
            raise_on_status=False,  # the last 5xx comes back as a response, for its body
            identifier=identifier,
            timeout_s=timeout_s,
        )

    def new(self, **kw: Any) -> AdapterRetry:
        return super().new(identifier=self.identifier, timeout_s=self.timeout_s, **kw)

    def get_backoff_time(self) -> float:
        # backoff_s × 2^(n-1) after the n-th failure: urllib3's would be 0 for the first
        failures = len(self.history)
        if failures == 0:
            return 0.0
        return float(self.backoff_factor * 2 ** (failures - 1))

    def get_retry_after(self, response: urllib3.BaseHTTPResponse) -> float | None:
        try:
            return super().get_retry_after(response)
        except InvalidHeader:
            return None  # unreadable: fall back to the backoff

    def increment(
        self,
        method: str | None = None,
        url: str | None = None,
        response: urllib3.BaseHTTPResponse | None = None,
        error: Exception | None = None,
        _pool: Any = None,
        _stacktrace: Any = None,
    ) -> AdapterRetry:
        # raises MaxRetryError on the last attempt: that one is not logged, it becomes the error
        following = super().increment(method, url, response, error, _pool, _stacktrace)
        attempts = len(self.history) + (self.total or 0) + 1
        if response is not None:
            problem = f"HTTP {response.status}: {snippet(response)}"
            delay = following.get_retry_after(response) or following.get_backoff_time()
        else:
            problem = describe(error, self.timeout_s)
            delay = following.get_backoff_time()
        logger.warning(
            "%s: attempt %d/%d failed (%s); retrying in %.2f s",
            self.identifier,
            len(following.history),
            attempts,
            redact(problem),
            delay,
        )
        return following


def describe(error: BaseException | None, timeout_s: float) -> str:
    """A failed attempt's problem, redacted: a timeout or a connection failure."""
    # a refused connection first: urllib3 files NewConnectionError under its timeout errors
    if isinstance(error, urllib3.exceptions.NewConnectionError):
        return redact(f"connection failed: {type(error).__name__}: {error}")
    if isinstance(error, urllib3.exceptions.TimeoutError):
        return f"timed out after {timeout_s:g} s"
    return redact(f"connection failed: {type(error).__name__}: {error}")


def snippet(response: urllib3.BaseHTTPResponse) -> str:
    """The start of a retried answer's body (at most 4 KiB of it is read: the rest is drained)."""
    return quoted_body(response.read(_SNIPPET_BYTES, cache_content=False))


def quoted_body(body: bytes) -> str:
    # redacted before it is cut, so a cut cannot leave half a secret readable
    return quote_body(body.decode("utf-8", errors="replace")) or "(empty body)"

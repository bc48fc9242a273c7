"""The ``http`` adapter: any search service with a JSON API.

.. code-block:: yaml

    retrievers:
      search_api:
        type: http
        url: https://search.internal/products/_search
        method: POST
        body: {query: {match: {text: "{question}"}}, size: "{limit}"}
        ids: "hits.hits[*]._id"                      # a JMESPath expression
        headers_from_env: {Authorization: SEARCH_AUTH}

Options:

- ``url``, ``method`` (``GET`` or ``POST``).
- ``params`` (query string) and ``body`` (JSON) templates: ``{question}`` and ``{limit}`` are
  replaced in every string value; a value that is exactly ``"{limit}"`` becomes an integer.
  Without either, GET sends ``?q={question}&limit={limit}`` and POST sends
  ``{"query": "{question}", "limit": "{limit}"}``.
- ``ids``: a JMESPath expression giving the list of document ids. Integer ids are converted to
  strings; anything else (a non-list, ``null``, objects) is an error naming the HTTP status.
- ``headers`` (plain), ``headers_from_env`` (header -> environment variable holding its value),
  ``connection_id`` (an Airflow connection: its password becomes the ``connection_header``,
  default ``Authorization``, as ``<connection_scheme> <password>``, default scheme ``Bearer``;
  scheme ``Basic`` encodes ``login:password``; ``extra.headers`` are added; a ``url`` starting
  with ``/`` is joined to the connection's host, port and schema). ``{question}`` in the url
  itself is URL-encoded. Secret values are never logged: every header value from the
  environment or a connection, the connection's password and the url's password and secret
  query values are registered with :mod:`retrieval_eval.safety.redaction` and masked as ``***`` in
  every error message and retry warning, with their parts and encodings (a token echoed without
  its ``Bearer``, JSON-escaped, URL-encoded, Basic auth's base64 or decoded ``user:password``).
  A response body quoted in an error is redacted and cut to 200 characters.
- ``timeout_s`` (per attempt, default 5), ``retries`` (default 2) with exponential backoff
  (``backoff_s`` × 2^n, default 0.5 s) on timeouts, connection errors, 5xx and 429 answers;
  other 4xx answers are not retried. A ``Retry-After`` on a 503 or 429 is waited for instead of
  the backoff, at most ``timeout_s`` per wait. urllib3's ``Retry`` does the retrying
  (:mod:`retrieval_eval.retrievers.http_retry`), one redacted warning per retried failure; redirects
  are not followed. A call, retries included, ends within (``retries`` + 1) × ``timeout_s``
  plus the backoff, whatever the server does: that total deadline bounds connect, headers and
  body together (:mod:`retrieval_eval.retrievers.http_bounds`; a server trickling its answer a
  byte at a time is cut off at it). The run's own ``timeout_s`` (default 30 s) is above it with
  the defaults (3 × 5 s + 1.5 s).
- ``max_response_bytes`` (default 16 MiB): a larger answer is an error naming the cap and the
  option; the body is read in chunks, never more than the cap held.
- ``max_concurrency`` (default 8): questions in flight at once; one pooled, thread-safe client.
- ``verify_tls`` (default true).
- ``lookup`` (optional): how to ask the service which document ids exist, for dead labels
  (:mod:`retrieval_eval.evaluation.labels`). Without it the adapter cannot check labels. Shaped like the
  search request: ``url`` (default: the search ``url``; relative urls join a connection's host
  the same way), ``method`` (default ``POST``), ``params`` / ``body`` templates where a value that
  is exactly ``"{ids}"`` becomes the list of ids (a JSON list in a body, a repeated parameter
  in ``params``) and ``{ids}`` inside a string becomes them comma-joined, ``ids`` (a JMESPath expression giving the ids that exist) and ``batch_size``
  (ids per request, default 500). Same headers, secrets, timeouts and retries as a search.

  .. code-block:: yaml

      lookup: {url: https://search.internal/products/_mget, body: {ids: "{ids}"},
               ids: "docs[?found]._id"}

- ``texts`` (optional): how to ask the service for documents' texts, for ``document_texts``
  (candidates to judge show their text). Shaped like ``lookup`` (``url``, ``method``, ``params``
  / ``body`` with ``{ids}``, ``batch_size``) but with ``texts``, a JMESPath expression giving
  ``[id, text]`` pairs (a multiselect list keeps a missing text as null, where a projection of
  the texts alone would drop it and misalign them); a pair whose text is null or empty is left
  out. Without it the adapter offers no texts.

  .. code-block:: yaml

      texts: {url: https://search.internal/products/_mget, body: {ids: "{ids}"},
              texts: "docs[?found].[_id, _source.body]"}
"""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import Annotated, Any, Literal, Self
from urllib.parse import quote, urlencode

import jmespath
import urllib3
from jmespath.exceptions import JMESPathError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.http_bounds import (
    TooLargeError,
    bounded_pool_manager,
    deadline,
    read_capped,
)
from retrieval_eval.retrievers.http_retry import (
    RETRIED_STATUSES,
    AdapterRetry,
    describe,
    quoted_body,
)
from retrieval_eval.retrievers.options import BuildContext, OptionsAdapter
from retrieval_eval.retrievers.secrets import airflow_connection, env_headers
from retrieval_eval.safety.redaction import (
    RedactingFilter,
    redact,
    register_header,
    register_secret,
    register_url,
)

logger = logging.getLogger(__name__)
# urllib3 logs request URLs, a secret query value (?api_key=) included: every request at debug
# level, and a retry after a connection failure at WARNING
for _name in ("urllib3.connectionpool", "urllib3.poolmanager", "urllib3.util.retry"):
    logging.getLogger(_name).addFilter(RedactingFilter())


class HttpRetrievalError(RuntimeError):
    """A failed or malformed answer; its message never holds a secret."""


def _compiles(value: str) -> str:
    try:
        jmespath.compile(value)
    except JMESPathError as exc:
        raise ValueError(f"not a valid JMESPath expression: {exc}") from None
    return value


# an option holding a JMESPath expression, checked when the options are read
JmesPath = Annotated[str, AfterValidator(_compiles)]


class _Templates(BaseModel):
    """What every request shares: the method and the query string and body templates."""

    model_config = ConfigDict(extra="forbid")

    method: Literal["GET", "POST"] = "GET"
    params: dict[str, Any] | None = None
    body: Any = None

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, value: Any) -> Any:
        return value.upper() if isinstance(value, str) else value


class _Request(_Templates):
    """What a search and a lookup request share: the templates and the JMESPath to the ids."""

    ids: JmesPath


class _ByIds(BaseModel):
    """A request about given ids (``{ids}`` in its templates), sent ``batch_size`` at a time."""

    url: str | None = None
    method: Literal["GET", "POST"] = "POST"
    batch_size: int = Field(default=500, ge=1)


class HttpLookup(_ByIds, _Request):
    """The optional existence lookup (dead labels)."""


class HttpTexts(_ByIds, _Templates):
    """The optional text request (``document_texts``): ``texts`` gives ``[id, text]`` pairs."""

    texts: JmesPath


class HttpOptions(_Request):
    url: str
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    connection_id: str | None = None
    connection_header: str = "Authorization"
    connection_scheme: str = "Bearer"
    timeout_s: float = Field(default=5.0, gt=0)
    retries: int = Field(default=2, ge=0)
    backoff_s: float = Field(default=0.5, ge=0)
    max_concurrency: int = Field(default=8, ge=1)
    verify_tls: bool = True
    max_response_bytes: int = Field(default=16 * 2**20, ge=1)
    lookup: HttpLookup | None = None
    texts: HttpTexts | None = None

    @field_validator("url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if not value.startswith(("http://", "https://", "/")):
            raise ValueError("must start with http:// or https:// (or / with connection_id)")
        return value


def fill_ids(template: Any, ids: list[str]) -> Any:
    """Replace ``{ids}``: exactly ``"{ids}"`` becomes the list, inside a string comma-joined."""
    if isinstance(template, str):
        if template == "{ids}":
            return list(ids)
        return template.replace("{ids}", ",".join(ids))
    if isinstance(template, Mapping):
        return {key: fill_ids(value, ids) for key, value in template.items()}
    if isinstance(template, list):
        return [fill_ids(value, ids) for value in template]
    return template


def fill(template: Any, question: str, limit: int) -> Any:
    """Replace ``{question}`` / ``{limit}`` in every string; exactly ``"{limit}"`` becomes an int."""
    if isinstance(template, str):
        if template == "{limit}":
            return limit
        return template.replace("{question}", question).replace("{limit}", str(limit))
    if isinstance(template, Mapping):
        return {key: fill(value, question, limit) for key, value in template.items()}
    if isinstance(template, list):
        return [fill(value, question, limit) for value in template]
    return template


class HttpRetriever(OptionsAdapter):
    """One pooled, thread-safe urllib3 ``PoolManager`` per retriever, shared by the scorer's threads.

    urllib3 rather than httpx: with many requests in flight on few cores, httpx's interpreter
    time per request, not the network, limits a run's throughput; urllib3's is small enough to
    keep a run near the ideal (docs/benchmarks.md measures it).
    """

    options_model = HttpOptions

    # every call ends by its deadline, (retries + 1) × timeout_s plus backoff, connect, headers
    # and body included (http_bounds), so the scorer calls it in its own thread and judges an
    # overrun afterwards instead of watching it from another one
    bounds_own_time = True

    def __init__(
        self,
        identifier: str,
        options: HttpOptions,
        *,
        secret_headers: Mapping[str, str] | None = None,
        secrets: list[str] | None = None,
        base_url: str = "",
    ) -> None:
        self.identifier = identifier
        self.options = options
        self.max_concurrency = options.max_concurrency
        secret_headers = dict(secret_headers or {})
        for value in secret_headers.values():
            register_header(value)
        for secret in secrets or []:
            register_secret(secret)
        self._url = base_url.rstrip("/") + options.url if base_url else options.url
        register_url(self._url)  # its password and secret query values (?api_key=...)
        self._where = _endpoint(options.method, self._url)
        self._ids = jmespath.compile(options.ids)
        self._lookup_ids = None
        if options.lookup is not None:
            # offered only when configured: without a lookup the labels cannot be checked
            self._lookup_ids = jmespath.compile(options.lookup.ids)
            self._lookup_url, self._lookup_where = _second_endpoint(
                options.lookup.method, options.lookup.url or options.url, base_url
            )
            self.existing_ids = self._existing_ids
            self.existing_ids_source = "http lookup"
        if options.texts is not None:
            self._texts_of = jmespath.compile(options.texts.texts)
            self._texts_url, self._texts_where = _second_endpoint(
                options.texts.method, options.texts.url or options.url, base_url
            )
            self.document_texts = self._document_texts
        params, body = options.params, options.body
        if params is None and body is None:
            if options.method == "GET":
                params = {"q": "{question}", "limit": "{limit}"}
            else:
                body = {"query": "{question}", "limit": "{limit}"}
        self._params, self._body = params, body
        self._bound = (options.retries + 1) * options.timeout_s + sum(
            options.backoff_s * 2**n for n in range(options.retries)
        )
        self._client = bounded_pool_manager(
            headers={**options.headers, **secret_headers},
            timeout=urllib3.Timeout(connect=options.timeout_s, read=options.timeout_s),
            cert_reqs="CERT_REQUIRED" if options.verify_tls else "CERT_NONE",
            maxsize=max(10, options.max_concurrency),
            retries=AdapterRetry.for_adapter(
                identifier,
                retries=options.retries,
                backoff_s=options.backoff_s,
                timeout_s=options.timeout_s,
            ),
        )

    @classmethod
    def from_checked(
        cls, identifier: str, opts: HttpOptions, where: str, context: BuildContext
    ) -> Self:
        if opts.url.startswith("/") and not opts.connection_id:
            raise ConfigError(
                f"{where}.url: a relative url needs connection_id (the connection's host is the "
                "base); or give the full http(s):// url"
            )
        for name, request in (("lookup", opts.lookup), ("texts", opts.texts)):
            other_url = request.url if request else None
            if other_url and not other_url.startswith(("http://", "https://", "/")):
                raise ConfigError(f"{where}.{name}.url: must start with http:// or https:// (or /)")
            if other_url and other_url.startswith("/") and not opts.connection_id:
                raise ConfigError(
                    f"{where}.{name}.url: a relative url needs connection_id; or give the full url"
                )
        secrets = env_headers(opts.headers_from_env, f"{where}.headers_from_env")
        base_url, raw = "", []
        if opts.connection_id:
            conn = airflow_connection(opts.connection_id, f"{where}.connection_id")
            secrets.update(_connection_headers(conn, opts))
            raw.append(conn.password or "")
            if opts.url.startswith("/"):
                base_url = _connection_base_url(conn, f"{where}.connection_id")
        return cls(identifier, opts, secret_headers=secrets, secrets=raw, base_url=base_url)

    def retrieve(self, question: str, limit: int) -> list[str]:
        try:
            return self._retrieve(question, limit)
        except HttpRetrievalError:
            raise
        except Exception as exc:
            # anything unexpected: its text may quote the request, so mask it and cut the chain
            raise HttpRetrievalError(
                redact(f"{self._where}: {type(exc).__name__}: {exc}")
            ) from None

    def _retrieve(self, question: str, limit: int) -> list[str]:
        opts = self.options
        url, body = self._request_url(question, limit), fill(self._body, question, limit)
        answer = self._send(opts.method, url, body, self._where)
        return self._parse(answer, self._ids, opts.ids, self._where)[:limit]

    def _existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Ask the ``lookup`` endpoint which ``ids`` exist, ``batch_size`` ids per request."""
        lookup = self.options.lookup
        assert lookup is not None and self._lookup_ids is not None
        asked = sorted(set(ids))
        found: set[str] = set()
        for answer in self._by_batch(lookup, asked, self._lookup_url, self._lookup_where):
            found.update(self._parse(answer, self._lookup_ids, lookup.ids, self._lookup_where))
        return found & set(asked)

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """Ask the ``texts`` endpoint for the texts of ``ids``, ``batch_size`` ids per request."""
        request, where = self.options.texts, self._texts_where
        assert request is not None
        asked = sorted(set(ids))
        texts: dict[str, str] = {}
        for status, body in self._by_batch(request, asked, self._texts_url, where):
            found = self._texts_of.search(json.loads(body)) if body else None
            if not isinstance(found, list) or not all(
                isinstance(p, list) and len(p) == 2 and isinstance(p[0], str | int) for p in found
            ):
                raise HttpRetrievalError(
                    f"{where}: HTTP {status}: texts expression {request.texts!r} must give a "
                    f"list of [id, text] pairs (such as 'docs[?found].[_id, _source.body]'): "
                    f"{quoted_body(body)}"
                )
            texts.update((str(i), t) for i, t in found if isinstance(t, str) and t)
        return {i: texts[i] for i in asked if i in texts}

    def _by_batch(
        self, request: HttpLookup | HttpTexts, asked: list[str], url: str, where: str
    ) -> Iterator[tuple[int, bytes]]:
        """The answers to ``request`` (``{ids}`` filled) for ``asked``, ``batch_size`` at a time;
        any failure an :class:`HttpRetrievalError` naming ``where``, redacted."""
        try:
            for start in range(0, len(asked), request.batch_size):
                batch = asked[start : start + request.batch_size]
                full = url
                params = fill_ids(request.params, batch)
                if params:
                    full += ("&" if "?" in full else "?") + urlencode(params, doseq=True)
                yield self._send(request.method, full, fill_ids(request.body, batch), where)
        except HttpRetrievalError:
            raise
        except Exception as exc:
            raise HttpRetrievalError(redact(f"{where}: {type(exc).__name__}: {exc}")) from None

    def _send(self, method: str, url: str, body: Any, where: str) -> tuple[int, bytes]:
        """One request with the adapter's retries, within the call's deadline: the status and
        body of a < 400 answer, else HttpRetrievalError."""
        attempts = self.options.retries + 1
        after = f"(after {attempts} attempt{'s' if attempts > 1 else ''})"
        cap = self.options.max_response_bytes
        with deadline(self._bound) as end:
            try:
                response = self._client.request(method, url, json=body, preload_content=False)
                data = read_capped(response, cap)
            except TooLargeError:
                raise HttpRetrievalError(
                    f"{where}: the answer is larger than {cap:,} bytes (max_response_bytes); "
                    "raise max_response_bytes if the service's answers are this large"
                ) from None
            except urllib3.exceptions.MaxRetryError as exc:
                # its own text names the url, query string included: only the reason is told
                raise HttpRetrievalError(
                    f"{where}: {self._problem(exc.reason, end)} {after}"
                ) from None
            except urllib3.exceptions.HTTPError as exc:
                # one urllib3 does not retry (a malformed answer it cannot read, a body too slow)
                raise HttpRetrievalError(f"{where}: {self._problem(exc, end)}") from None
        status = response.status
        if status < 400:
            return status, data
        if status not in RETRIED_STATUSES:
            raise HttpRetrievalError(
                f"{where}: HTTP {status} (client error, not retried): {quoted_body(data)}"
            )
        raise HttpRetrievalError(f"{where}: HTTP {status}: {quoted_body(data)} {after}")

    def _problem(self, error: BaseException | None, end: float) -> str:
        timed_out = isinstance(error, urllib3.exceptions.TimeoutError | TimeoutError)
        if timed_out and time.monotonic() >= end - 0.05:  # the last wait ran into the deadline
            deadline_spent = (
                f"no complete answer within the call's deadline of {self._bound:g} s "
                "((retries + 1) × timeout_s plus backoff)"
            )
            if isinstance(error, urllib3.exceptions.TimeoutError):  # each attempt timed out too
                return f"{describe(error, self.options.timeout_s)}; {deadline_spent}"
            return deadline_spent
        return describe(error, self.options.timeout_s)

    def _request_url(self, question: str, limit: int) -> str:
        url = self._url.replace("{question}", quote(question, safe="")).replace(
            "{limit}", str(limit)
        )
        params = fill(self._params, question, limit)
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params, doseq=True)
        return url

    def _parse(
        self, answer: tuple[int, bytes], compiled: Any, expression: str, where: str
    ) -> list[str]:
        status, body = answer
        try:
            data = json.loads(body)
        except ValueError:
            raise HttpRetrievalError(
                f"{where}: HTTP {status}: the response is not JSON: {quoted_body(body)}"
            ) from None
        found = compiled.search(data)
        if found is None:
            raise HttpRetrievalError(
                f"{where}: HTTP {status}: ids expression {expression!r} matched nothing "
                f"in the response: {quoted_body(body)}"
            )
        if not isinstance(found, list):
            raise HttpRetrievalError(
                f"{where}: HTTP {status}: ids expression {expression!r} gave a "
                f"{type(found).__name__}, expected a list of document ids"
            )
        ids = []
        for index, value in enumerate(found):
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise HttpRetrievalError(
                    f"{where}: HTTP {status}: ids expression {expression!r} gave "
                    f"{type(value).__name__} at position {index}, expected a document id string"
                )
            ids.append(str(value))
        return ids

    def close(self) -> None:
        self._client.clear()

    def __repr__(self) -> str:
        return f"HttpRetriever({self.identifier!r}, {self._where!r})"


def _endpoint(method: str, full_url: str) -> str:
    """What errors name: method and URL without credentials or query string."""
    url = urllib3.util.parse_url(full_url)
    port = f":{url.port}" if url.port else ""
    return f"{method} {url.scheme}://{url.host}{port}{url.path or ''}"


def _second_endpoint(method: str, path: str, base_url: str) -> tuple[str, str]:
    """The lookup's or the texts request's URL (a path starting with "/" is on ``base_url``),
    registered for redaction, and what its errors name: the same for both requests."""
    url = base_url.rstrip("/") + path if path.startswith("/") else path
    register_url(url)
    return url, _endpoint(method, url)


def _connection_headers(conn: Any, opts: HttpOptions) -> dict[str, str]:
    headers: dict[str, str] = {}
    extra = getattr(conn, "extra_dejson", None) or {}
    extra_headers = extra.get("headers") if isinstance(extra, Mapping) else None
    if isinstance(extra_headers, Mapping):
        headers.update({str(k): str(v) for k, v in extra_headers.items()})
    if conn.password:
        token = conn.password
        if opts.connection_scheme.lower() == "basic":
            token = base64.b64encode(f"{conn.login or ''}:{conn.password}".encode()).decode()
        scheme = opts.connection_scheme.strip()
        headers[opts.connection_header] = f"{scheme} {token}" if scheme else token
    return headers


def _connection_base_url(conn: Any, where: str) -> str:
    host = (conn.host or "").rstrip("/")
    if not host:
        raise ConfigError(f"{where}: the connection has no host to join a relative url to")
    if "://" in host:
        return host
    scheme = conn.schema if conn.schema in ("http", "https") else "http"
    return f"{scheme}://{host}" + (f":{conn.port}" if conn.port else "")

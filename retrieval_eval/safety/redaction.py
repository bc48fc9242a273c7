"""One redaction policy for every secret the tool knows: register it once, mask it everywhere.

A secret is registered the moment the tool reads it, before anything can quote it:

- header values of the ``http`` adapter, from ``headers_from_env`` or an Airflow connection
  (:func:`register_header`);
- the password of every Airflow connection an adapter reads, with its ``login:password``
  (:func:`register_credentials`);
- URL passwords and secret query values (a parameter whose name holds ``pass``, ``pwd``,
  ``secret``, ``token``, ``key``, ``auth``, ``sig`` or ``credential``): store URLs, ``postgres_fts``
  URLs, the ``http`` adapter's url (:func:`register_url`);
- alert channels: the Slack webhook path in the connection password (``T000/B000/xxx``) and the
  webhook sender's bearer token (:func:`register_webhook`).

Every error text goes through :func:`redact` before it is logged, reported, spooled or stored:
the scorer applies it where a retriever's exception becomes a question's ``error``, so every
adapter is covered, and adapters apply it to their own messages and retry warnings. A response
body quoted in an error goes through :func:`quote_body`: redacted, whitespace collapsed,
redacted again, cut to :data:`BODY_QUOTE_CHARS` characters (masking comes first, so a cut can
never leave half a secret readable).

What is masked, as ``***``: each registered value's parts,

- the whole value (``Bearer tok...``);
- the value without its auth scheme (``tok...``: the first word dropped when it looks like a
  scheme, ``Bearer``, ``Basic``, ``Token``, ...);
- for Basic auth, the decoded ``user:password`` and the password alone;

each in its common encodings: as is; JSON-escaped (``json.dumps`` without its quotes, ASCII-only
or not, and escaped twice, for JSON quoted inside JSON); URL-encoded (``urllib.parse.quote``
with and without ``/`` kept, ``quote_plus``, upper- or lowercase hex); HTML-escaped; and for a
``user:password``, its base64 (standard and URL-safe, with or without padding).

The 6-character rule: a part shorter than :data:`MIN_SECRET_CHARS` (6) is not registered, nor
are its encodings. Masking every occurrence of ``abc`` or ``1234`` would garble error texts
(ports, ids, words) far more often than it would catch a secret; so a 4-character password is
masked only inside the longer parts that hold it (``user:pass``, the header, its base64), and a
secret meant to stay secret should be longer anyway. Matching is exact and case-sensitive
(percent-escapes aside).

Secrets live for the process (a CLI run, an Airflow task): registering is idempotent and
thread-safe.

Unregistered secrets, by their shape: a retriever's exception may quote a credential the tool
never read (its own database URL, an API key in a request URL). After the registered values,
:func:`redact` masks (:func:`mask_credentials`)

- a URL's userinfo password: ``postgresql://u:***@h/db`` (the user stays; a URL without a
  password, ``postgresql://eval@db/r``, is left alone);
- the value of a secret-named query parameter after ``?`` or ``&`` (the names above):
  ``?api_key=***&q=refund``; and bare ``name=value`` or ``"name": "value"`` for names that are
  unmistakably secret (``password``, ``passwd``, ``pwd``, ``secret``, ``token``, ``api_key``,
  ``access_key``, ``credential`` and names ending so, such as ``client_secret``);
- an ``Authorization`` header's value, keeping its scheme (``Authorization: Bearer ***``), and a
  ``Bearer`` token anywhere (8+ token characters holding a digit: ``Bearer authentication
  required`` stays readable), and ``Basic`` credentials that decode to ``user:password``.

Ordinary texts stay intact: ``key=value pairs``, ``sort_key=title``, ``?q=refund&limit=12``,
``port=8080``, a URL with a port and no password. The masking is idempotent (``***`` masked
again reads ``***``).
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections.abc import Iterable, Iterator

MASK = "***"
MIN_SECRET_CHARS = 6
BODY_QUOTE_CHARS = 200

# query parameters whose value is a secret, by name (api_key, access_token, password, sig, ...)
SECRET_QUERY_NAME = re.compile(r"pass|pwd|secret|token|key|auth|sig|credential", re.IGNORECASE)
# the first word of a header value that is an auth scheme (RFC 9110 token characters)
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9!#$%&'*+.^_`|~-]*")
_PERCENT_ESCAPE = re.compile(r"%[0-9A-F]{2}")

_lock = threading.Lock()
_registered: frozenset[str] = frozenset()
_pattern: re.Pattern[str] | None = None


# a URL's userinfo password: scheme://user:PASSWORD@ (userinfo never holds / ? # or spaces)
_URL_PASSWORD = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*://[^\s:/?#@]*:)[^\s/?#@]+@")
# a query parameter after ? or & (its name judged by SECRET_QUERY_NAME)
_QUERY_PARAMETER = re.compile(r"([?&]([^\s=&#?]+)=)([^\s&#\"'<>]+)")
# bare name=value or "name": "value" for unmistakably secret names
_BARE_NAME = (
    r"[A-Za-z0-9_.-]*(?:pass(?:word|wd)|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?)"
)
_BARE_ASSIGNMENT = re.compile(
    rf"(?<![A-Za-z0-9_.-])((?:{_BARE_NAME})=)([^\s&#\"'<>,;)]+)"
    rf"|([\"']{_BARE_NAME}[\"']\s*:\s*[\"'])([^\"']+)",
    re.IGNORECASE,
)
_AUTHORIZATION = re.compile(
    r"(Authorization[\"']?\s*[:=]\s*[\"']?(?:(?:Bearer|Basic|Token|Digest|ApiKey)\s+)?)"
    r"([^\s\"',;]+)",
    re.IGNORECASE,
)
_BEARER = re.compile(r"(\bBearer\s+)([A-Za-z0-9._~+/=-]*[0-9][A-Za-z0-9._~+/=-]*)")
_BASIC = re.compile(r"(\bBasic\s+)([A-Za-z0-9+/_-]{6,}={0,2})")


def redact(text: str) -> str:
    """``text`` with every registered secret, in every registered form, replaced by ``***``,
    then every credential-shaped value (:func:`mask_credentials`)."""
    if not text:
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return mask_credentials(text)


# personal data in captured queries (replay samples): an email, a phone number, a digit run
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_PHONE = re.compile(r"(?<!\w)\+?\(?\d[\d ()./-]{7,}\d(?!\w)")
_DIGITS = re.compile(r"\d{6,}")


def redact_personal(text: str) -> str:
    """``text`` with every secret :func:`redact` masks, then emails, phone numbers (8+ digits
    with separators) and runs of 6+ digits replaced by ``<email>``, ``<phone>``, ``<number>``."""
    text = _EMAIL.sub("<email>", redact(text))
    text = _PHONE.sub(_phone, text)
    return _DIGITS.sub("<number>", text)


def _phone(match: re.Match[str]) -> str:
    """A phone number: 8+ digits written with a ``+`` or separators (a bare run is a number)."""
    found = match.group()
    digits = sum(c.isdigit() for c in found)
    spelled = found.startswith("+") or digits < len(found)
    return "<phone>" if digits >= 8 and spelled else found


def mask_credentials(text: str) -> str:
    """``text`` with credentials recognised by their shape masked: URL passwords, secret query
    and ``name=value`` values, ``Authorization``/``Bearer``/``Basic`` credentials."""
    text = _URL_PASSWORD.sub(rf"\1{MASK}@", text)
    text = _QUERY_PARAMETER.sub(
        lambda m: m[1] + MASK if SECRET_QUERY_NAME.search(m[2]) else m[0], text
    )
    text = _BARE_ASSIGNMENT.sub(lambda m: (m[1] or m[3]) + MASK, text)
    text = _AUTHORIZATION.sub(rf"\1{MASK}", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    return _BASIC.sub(lambda m: m[1] + MASK if _is_basic_pair(m[2]) else m[0], text)


def _is_basic_pair(token: str) -> bool:
    decoded = _b64decode(token.replace("-", "+").replace("_", "/"))
    return decoded is not None and ":" in decoded and decoded.isprintable()


def quote_body(body: str, limit: int = BODY_QUOTE_CHARS) -> str:
    """A response body fit to quote in an error: redacted, on one line, at most ``limit`` chars."""
    text = redact(" ".join(redact(body).split()))  # again: collapsing spaces may join a secret
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text


def register_secret(value: str | None) -> None:
    """Register a plain secret value (a token, a password) in all its encodings."""
    _register([value] if value else [])


def register_header(value: str | None) -> None:
    """Register a header value: whole, without its auth scheme, and Basic auth's credentials."""
    if not value:
        return
    parts = [value]
    scheme, _, rest = value.strip().partition(" ")
    token = rest.strip()
    if token and _SCHEME.fullmatch(scheme):
        parts.append(token)
        if scheme.lower() == "basic":
            decoded = _b64decode(token)
            if decoded is not None and ":" in decoded:
                register_credentials(*decoded.split(":", 1))
    _register(parts)


def register_credentials(login: str | None, password: str | None) -> None:
    """Register a password, its ``login:password`` and that pair's base64 (Basic auth)."""
    if not password:
        return
    pair = f"{login or ''}:{password}"
    _register([password, pair], pairs=[pair])


def register_url(url: str | None) -> None:
    """Register a URL's password (as written and decoded, with its user) and secret query values.

    Never raises: a URL too broken to parse registers what can be found.
    """
    if not url:
        return
    from urllib.parse import parse_qsl, unquote, urlsplit

    try:
        parts = urlsplit(url)
        login, password = parts.username, parts.password
        query = parse_qsl(parts.query, keep_blank_values=False)
    except ValueError:
        return
    if password:
        register_secret(password)
        register_credentials(unquote(login or ""), unquote(password))
    register_query(query)


def register_query(items: Iterable[tuple[str, object]]) -> None:
    """Register the values of secret-named query parameters (``api_key``, ``token``, ...)."""
    for name, value in items:
        if SECRET_QUERY_NAME.search(name):
            values = value if isinstance(value, tuple | list) else [value]
            _register([str(v) for v in values if v])


def register_webhook(secret: str | None) -> None:
    """Register a webhook secret: the whole value (a path like ``T000/B000/xxx``, or a URL) and
    its last path segment (Slack's token); a URL's path too."""
    if not secret:
        return
    parts = [secret, secret.rstrip("/").rsplit("/", 1)[-1]]
    if "://" in secret:
        from urllib.parse import urlsplit

        with contextlib.suppress(ValueError):  # a broken URL: its whole and last segment
            parts.append(urlsplit(secret).path.strip("/"))
        register_url(secret)
    _register(parts)


def is_secret_query_name(name: str) -> bool:
    return bool(SECRET_QUERY_NAME.search(name))


class RedactingFilter(logging.Filter):
    """A logging filter that redacts each record's message: for a library's own logger (urllib3
    logs request URLs, query tokens included, at debug level)."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        masked = redact(message)
        if masked != message:
            record.msg, record.args = masked, None
        return True


def forget_all() -> None:
    """Forget every registered secret, as a fresh process would start (for tests)."""
    global _registered, _pattern
    with _lock:
        _registered, _pattern = frozenset(), None


def _register(parts: Iterable[str], *, pairs: Iterable[str] = ()) -> None:
    global _registered, _pattern
    forms = {form for part in parts if len(part) >= MIN_SECRET_CHARS for form in _encodings(part)}
    forms.update(form for pair in pairs if len(pair) >= MIN_SECRET_CHARS for form in _base64(pair))
    forms = {form for form in forms if len(form) >= MIN_SECRET_CHARS}
    with _lock:
        if forms <= _registered:
            return
        _registered = _registered | forms
        # longest first: a secret containing another is masked whole, in one pass
        ordered = sorted(_registered, key=lambda form: (-len(form), form))
        _pattern = re.compile("|".join(map(re.escape, ordered)))


def _encodings(part: str) -> Iterator[str]:
    import html
    import json
    from urllib.parse import quote, quote_plus

    yield part
    escaped = json.dumps(part)[1:-1]
    yield escaped
    yield json.dumps(part, ensure_ascii=False)[1:-1]
    yield json.dumps(escaped)[1:-1]  # JSON quoted inside a JSON string
    yield html.escape(part)
    # surrogatepass: a secret with a byte that is not UTF-8 (an argument's) is still masked,
    # never a UnicodeEncodeError that ends the command
    wide = "surrogatepass"
    for encoded in (
        quote(part, "", errors=wide),
        quote(part, errors=wide),
        quote_plus(part, errors=wide),
    ):
        yield encoded
        yield _PERCENT_ESCAPE.sub(lambda m: m.group().lower(), encoded)


def _base64(pair: str) -> Iterator[str]:
    import base64

    raw = pair.encode("utf-8", "surrogatepass")
    for encoded in (base64.b64encode(raw).decode(), base64.urlsafe_b64encode(raw).decode()):
        yield encoded
        yield encoded.rstrip("=")


def _b64decode(token: str) -> str | None:
    import base64
    import binascii

    try:
        return base64.b64decode(token + "=" * (-len(token) % 4), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return None

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

- tokens by their own shape, the families secret scanners know (gitleaks' rules, detect-secrets'
  plugins; their published examples are tests/safety/scanner_examples.py): JWTs, AWS access key
  ids, Stripe ``sk_``/``rk_`` keys, GitHub and GitLab tokens, Slack tokens and webhook paths,
  OpenAI, Google, npm, PyPI and SendGrid keys, private key blocks (:data:`TOKEN_SHAPES`);
- a generic ``name: value`` / ``name = "value"`` whose name says access, auth, api, key,
  credential, password, secret or token and whose value looks random (10+ characters with a
  letter and a digit, Shannon entropy of 3.5 bits a character or more, as gitleaks' generic
  rule): an AWS secret access key after ``aws_secret_access_key =``.

Ordinary texts stay intact: ``key=value pairs``, ``sort_key=title``, ``?q=refund&limit=12``,
``port=8080``, a URL with a port and no password, snake_case names (``retriever:
handbook_bm25_top1``), hex digests without a keyword. The masking is idempotent (``***`` masked
again reads ``***``).

Captured queries (:func:`redact_personal`, a sample's ``redacted`` privacy and its errors) get
all of the above, then personal data: IBANs whole (checked by their ISO 13616 checksum), emails,
IPv4 and IPv6 addresses (compressed forms and zone ids too; loopback and unspecified stay),
phone numbers and digit runs.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import threading
from collections import Counter
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

SLACK_HOOKS = ("services", "workflows", "triggers")
# credentials by their own shape (gitleaks' rules and detect-secrets' plugins, same families):
# family -> (the literal cues one of which the token holds, its pattern). A text holding no cue
# is not searched: the cues are plain substring tests, far cheaper than the patterns.
TOKEN_SHAPES: dict[str, tuple[tuple[str, ...], str]] = {
    "jwt": (
        ("eyJ",),
        r"\beyJ[A-Za-z0-9_-]{8,}={0,2}\.ey[A-Za-z0-9_/\\-]{10,}={0,2}(?:\.[A-Za-z0-9_/\\-]*={0,2})?",
    ),
    "aws-access-key-id": (
        ("A3T", "AKIA", "ASIA", "ABIA", "ACCA"),
        r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b",
    ),
    "stripe": (
        ("k_live_", "k_test_", "k_prod_"),
        r"\b[rs]k_(?:live|test|prod)_[A-Za-z0-9]{10,99}\b",
    ),
    "github": (
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
        r"\b(?:gh[pousr]_[A-Za-z0-9_]{36,255}|github_pat_\w{22,255})",
    ),
    "gitlab": (("glpat-", "gldt-", "glptt-", "glrt-"), r"\bgl(?:pat|dt|ptt|rt)-[A-Za-z0-9_-]{20,}"),
    "slack": (("xox", "xapp-"), r"\bx(?:ox[abeoprs]|app)-(?=[A-Za-z0-9-]*\d)[A-Za-z0-9-]{6,}"),
    "slack-webhook": (
        ("hooks.slack.com/",),
        "(?:"
        + "|".join(rf"(?<=hooks\.slack\.com/{p}/)" for p in SLACK_HOOKS)
        + ")[A-Za-z0-9/_+-]+",
    ),
    "openai": (("sk-",), r"\bsk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z0-9_-]*\d)[A-Za-z0-9_-]{20,}"),
    "google-api-key": (("AIza",), r"\bAIza[0-9A-Za-z_-]{35}"),
    "npm": (("npm_",), r"\bnpm_[A-Za-z0-9]{36}\b"),
    "pypi": (("pypi-",), r"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}"),
    "sendgrid": (("SG.",), r"\bSG\.[\w-]{22}\.[\w-]{43}\b"),
    "private-key": (
        ("-----BEGIN",),
        r"-----BEGIN[A-Z ]*PRIVATE KEY(?: BLOCK)?-----.*?-----END[A-Z ]*PRIVATE KEY(?: BLOCK)?-----",
    ),
}
_TOKEN_CUES = tuple(cue for cues, _ in TOKEN_SHAPES.values() for cue in cues)
_TOKENS = re.compile("|".join(f"(?:{shape})" for _, shape in TOKEN_SHAPES.values()), re.DOTALL)
# name: value, name = "value", "name": "value" for names that say secret (gitleaks' generic rule)
_GENERIC_NAMES = ("access", "auth", "api", "cred", "key", "passw", "secret", "token")
_GENERIC_ASSIGNMENT = re.compile(
    r"(?i)(\b[\w.-]{0,40}?(?:access|auth(?!or)|api|credential|creds|key|passw(?:or)?d|secret"
    r"|token)[\w.-]{0,20}[\"'`]?\s{0,3}(?:=>|:=|=|:|,)\s{0,3}[\"'`]?)([A-Za-z0-9+/_.=-]{10,150})"
)
_IDENTIFIER = re.compile(r"[a-z]+(?:[_.-][a-z0-9]+)+")  # snake_case, dotted.names: no secret
# names with a secret word that name no secret (a run's key, a primary key; gitleaks' allowlist)
_NOT_SECRET_NAME = re.compile(
    r"(?i)(?:run|cache|sort|primary|foreign|public|pub|idx|schema|sequence|partition|bucket|object"
    r"|hash|trend)[_.-]?keys?\b|key[_.-]?(?:id|name|alias|size|length)\b|api[_.-]?(?:version|name)"
    r"\b|access[_.-]?id\b|author"
)
GENERIC_MIN_ENTROPY = 3.5


def redact(text: str) -> str:
    """``text`` with every registered secret, in every registered form, replaced by ``***``,
    then every credential-shaped value (:func:`mask_credentials`)."""
    if not text:
        return text
    pattern = _pattern
    if pattern is not None:
        text = pattern.sub(MASK, text)
    return mask_credentials(text)


# personal data in captured queries (replay samples): an IBAN, an email, an IP address, a phone
# number, a digit run
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]){11,30}\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?!\w|\.\d)")
_IPV6 = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:[0-9A-Fa-f]{1,4}|(?:\d{1,3}\.){3}\d{1,3})?"
    r"(?:%[\w.-]+)?(?![\w:]|\.\d)"
)
_PHONE = re.compile(r"(?<!\w)\+?\(?\d[\d ()./-]{7,}\d(?!\w)")
_DIGITS = re.compile(r"\d{6,}")


def redact_personal(text: str) -> str:
    """``text`` with every secret :func:`redact` masks, then IBANs, emails, IP addresses, phone
    numbers (8+ digits with separators) and runs of 6+ digits replaced by ``<iban>``,
    ``<email>``, ``<ip>``, ``<phone>``, ``<number>``."""
    text = _IBAN.sub(_iban, redact(text))
    text = _EMAIL.sub("<email>", text)
    text = _IPV6.sub(_ip, _IPV4.sub(_ip, text))
    text = _PHONE.sub(_phone, text)
    return _DIGITS.sub("<number>", text)


def _iban(match: re.Match[str]) -> str:
    """An IBAN whole, or the longest start of the match that is one (a word in capitals after
    it joins the match); anything else as it was."""
    found = match.group()
    cuts = [len(found)] + [i for i in range(len(found) - 1, 14, -1) if found[i] in " -"]
    for end in cuts:
        if _iban_checksum(found[:end]):
            return "<iban>" + found[end:]
    return found


def _iban_checksum(text: str) -> bool:
    """ISO 13616: 15 to 34 characters whose rearranged digits are 1 modulo 97."""
    compact = text.replace(" ", "").replace("-", "")
    if not 15 <= len(compact) <= 34:
        return False
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(c, 36)) for c in rearranged)) % 97 == 1


def _ip(match: re.Match[str]) -> str:
    """An IP address (as :mod:`ipaddress` reads it) but loopback and unspecified, which name
    nobody; anything else (a version ``1.2.3.4.5``, a time ``10:30:00``) as it was."""
    import ipaddress

    found = match.group()
    try:
        address = ipaddress.ip_address(found)
    except ValueError:
        return found
    return found if address.is_loopback or address.is_unspecified else "<ip>"


def _phone(match: re.Match[str]) -> str:
    """A phone number: 8+ digits written with a ``+`` or separators (a bare run is a number)."""
    found = match.group()
    digits = sum(c.isdigit() for c in found)
    spelled = found.startswith("+") or digits < len(found)
    return "<phone>" if digits >= 8 and spelled else found


def mask_credentials(text: str) -> str:
    """``text`` with credentials recognised by their shape masked: URL passwords, secret query
    and ``name=value`` values, ``Authorization``/``Bearer``/``Basic`` credentials, the tokens of
    :data:`TOKEN_SHAPES` and random-looking values of secret-named assignments."""
    text = _URL_PASSWORD.sub(rf"\1{MASK}@", text)
    text = _QUERY_PARAMETER.sub(
        lambda m: m[1] + MASK if SECRET_QUERY_NAME.search(m[2]) else m[0], text
    )
    text = _BARE_ASSIGNMENT.sub(lambda m: (m[1] or m[3]) + MASK, text)
    text = _AUTHORIZATION.sub(rf"\1{MASK}", text)
    text = _BEARER.sub(rf"\1{MASK}", text)
    text = _BASIC.sub(lambda m: m[1] + MASK if _is_basic_pair(m[2]) else m[0], text)
    if any(cue in text for cue in _TOKEN_CUES):
        text = _TOKENS.sub(MASK, text)
    lower = text.lower()
    if not any(name in lower for name in _GENERIC_NAMES):
        return text
    return _GENERIC_ASSIGNMENT.sub(_generic, text)


def _generic(match: re.Match[str]) -> str:
    name, value = match[1], match[2]
    if _NOT_SECRET_NAME.search(name) or not _looks_random(value):
        return match[0]
    return name + MASK


def _looks_random(value: str) -> bool:
    """A value random enough to be a key: a letter and a digit, not a snake_case name, and
    :data:`GENERIC_MIN_ENTROPY` bits a character or more."""
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if _IDENTIFIER.fullmatch(value):
        return False
    counts = Counter(value)
    entropy = -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())
    return entropy >= GENERIC_MIN_ENTROPY


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

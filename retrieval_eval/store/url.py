"""Where the result store lives: URL lookup order, the default location, masking for messages.

Lookup order: ``--db``, then ``$RETRIEVAL_EVAL_DB``, then the config's ``store:``, then
``sqlite:///$RETRIEVAL_EVAL_HOME/results.sqlite`` (``RETRIEVAL_EVAL_HOME`` defaults to
``~/.retrieval-eval``). Supported: ``sqlite:///path`` and ``postgresql://user@host:port/db``
(``postgresql+psycopg://`` too; plain ``postgresql://`` and the ``postgres://`` form Airflow
connections render are rewritten to psycopg 3).

Edge cases: a relative SQLite path in the config file resolves against the config's folder (a
bare path, ``store: results.sqlite``, is one too), one given by ``--db`` or the environment
against the working directory; ``~`` is expanded. Every URL
shown to a person goes through :func:`mask_url`, so passwords (and secret query parameters such
as ``?password=``) never reach a message or a log; every URL parsed here is also registered with
:mod:`retrieval_eval.safety.redaction`, so a password quoted in any error text is masked as well.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from retrieval_eval.errors import InvalidInputError
from retrieval_eval.paths import HOME_ENV, home_dir
from retrieval_eval.safety.redaction import MASK, is_secret_query_name, register_url
from retrieval_eval.safety.surrogates import lone_surrogate

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config

DB_ENV = "RETRIEVAL_EVAL_DB"
DEFAULT_DB_NAME = "results.sqlite"

_BACKENDS = {
    "sqlite": "sqlite",
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",  # Connection.get_uri() of an Airflow postgres connection
}
# what starts a URL (any scheme, also a misspelt one, which is refused by name below)
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
# userinfo in an URL that could not even be parsed: hide everything between ':' and '@'
_RAW_PASSWORD = re.compile(r"(://[^:/@]*:)[^@]*@")
# and the value of a secret query parameter (password=, sslpassword=, token=, ...)
_RAW_QUERY_VALUE = re.compile(r"([?&]([^=&#]*)=)[^&#]*")


def default_store_url() -> str:
    return f"sqlite:///{home_dir() / DEFAULT_DB_NAME}"


def mask_url(url: str | URL) -> str:
    """The URL with its password and secret query values replaced by ``***``; safe for messages
    and logs."""
    try:
        parsed = url if isinstance(url, URL) else make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a non-numeric port
        masked = _RAW_PASSWORD.sub(rf"\1{MASK}@", str(url))
        return _RAW_QUERY_VALUE.sub(
            lambda m: m[1] + MASK if is_secret_query_name(m[2]) else m[0], masked
        )
    if any(map(is_secret_query_name, parsed.query)):
        query = {k: MASK if is_secret_query_name(k) else v for k, v in parsed.query.items()}
        # rendering percent-encodes the mask; shown as written, it reads as one
        rendered = parsed.set(query=query).render_as_string(hide_password=True)
        return rendered.replace("%2A%2A%2A", MASK)
    return parsed.render_as_string(hide_password=True)


def store_fingerprint(url: str) -> str:
    """A digest of the full, normalised URL (:func:`parse_store_url`), password included: tells
    whether two URLs name the same store without keeping the password (a spool file records
    it). InvalidInputError for a URL that names no store."""
    full = parse_store_url(url).render_as_string(hide_password=False)
    return hashlib.sha256(full.encode()).hexdigest()[:32]


def parse_store_url(url: str, *, source: str = "store URL", base_dir: Path | None = None) -> URL:
    """Parse and check a store URL; relative SQLite paths resolve against ``base_dir``.

    With ``base_dir`` (the config's folder) a bare path (``results.sqlite``) is a SQLite file
    too. Raises InvalidInputError naming ``source`` for an unparsable URL or an unsupported
    backend.
    """
    register_url(url)  # first: even a URL refused below may be quoted by someone else
    char = lone_surrogate(url)
    if (
        char is not None
    ):  # a byte that is not UTF-8 (an argument's, a variable's): no driver takes it
        where = f" (it comes from ${HOME_ENV})" if source == "default store" else ""
        raise InvalidInputError(
            f"{source}: the store URL holds {char}, a byte that is not UTF-8 text{where}; a "
            "database's path, name and user must be text"
        )
    if base_dir is not None and not _SCHEME.match(url):
        url = f"sqlite:///{url}"  # the config's `store: results.sqlite`: a file beside it
    try:
        parsed = make_url(url)
    except (ArgumentError, ValueError):  # ValueError: a non-numeric port
        raise InvalidInputError(
            f"{source}: cannot parse store URL {mask_url(url)!r}; expected sqlite:///path or "
            "postgresql://user@host:port/database"
        ) from None
    backend = parsed.get_backend_name()
    driver = _BACKENDS.get(backend)
    if driver is None:
        raise InvalidInputError(
            f"{source}: unsupported store backend {backend!r} in {mask_url(parsed)!r}; "
            "use sqlite:///path or postgresql://user@host:port/database"
        )
    if driver != "sqlite":
        return parsed.set(drivername=driver)
    database = parsed.database or ""
    if not database or database == ":memory:":
        raise InvalidInputError(
            f"{source}: {mask_url(parsed)!r} names no file; the store must outlive the process, "
            "use sqlite:///path/to/results.sqlite"
        )
    path = Path(database).expanduser()
    if not path.is_absolute():
        path = (base_dir or Path.cwd()) / path
    return parsed.set(drivername=driver, database=str(path))


def resolve_store_url(explicit: str | None = None, config: Config | None = None) -> str:
    """The store URL by lookup order (``--db``, ``$RETRIEVAL_EVAL_DB``, config, default).

    The result is normalised (absolute SQLite path, psycopg 3 driver) but keeps its password: pass
    it to :func:`open_store`, show it only through :func:`mask_url`.
    """
    env = os.environ.get(DB_ENV)
    if explicit:
        parsed = parse_store_url(explicit, source="--db")
    elif env:
        parsed = parse_store_url(env, source=f"${DB_ENV}")
    elif config is not None and config.store:
        parsed = parse_store_url(
            config.store, source=f"{config.source}: store", base_dir=config.base_dir
        )
    else:
        parsed = parse_store_url(default_store_url(), source="default store")
    return parsed.render_as_string(hide_password=False)


# the Airflow connection types a store can be read from (retrieval_eval.airflow.hooks has the
# first; Airflow's own postgres connections keep working)
STORE_CONNECTION_TYPES = ("retrieval_eval_store", "postgres", "postgresql")


def store_url_for(
    config: Config | None,
    connection_id: str | None,
    connection_store: Callable[[str], tuple[str, str]],
) -> str:
    """The store the DAGs write and the dashboard reads.

    The Airflow connection ``connection_id`` (``airflow.store_connection_id``) when given, read
    through ``connection_store`` as ``(connection type, store URL)`` (each Airflow process reads
    connections its own way); else the usual lookup of :func:`resolve_store_url`.
    """
    if not connection_id:
        return resolve_store_url(None, config)
    # "generic" when the CLI did not know --conn-type postgres (the postgres provider missing)
    conn_type, uri = connection_store(connection_id)
    if conn_type not in STORE_CONNECTION_TYPES:
        raise InvalidInputError(
            f"Airflow connection {connection_id!r} (airflow.store_connection_id) has type "
            f"{conn_type!r}; the result store needs a 'retrieval_eval_store' or 'postgres' "
            f"connection: create it with `airflow connections add {connection_id} --conn-type "
            "retrieval_eval_store --conn-host HOST --conn-schema DATABASE --conn-login USER "
            "--conn-password ...` (or `--conn-uri postgresql://user:password@host:5432/database`)"
        )
    parsed = parse_store_url(uri, source=f"Airflow connection {connection_id!r}")
    return parsed.render_as_string(hide_password=False)

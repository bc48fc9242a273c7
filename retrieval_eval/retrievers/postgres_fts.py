"""The ``postgres_fts`` adapter: PostgreSQL full-text search over your own table.

.. code-block:: yaml

    retrievers:
      docs_fts:
        type: postgres_fts
        url_from_env: DOCS_DB_URL          # or url: ..., or connection_id: my_postgres (Airflow)
        table: documents                   # taken literally; quoting is done for you
        schema: public                     # optional
        id_column: doc_id
        text_columns: [title, body]        # or tsvector_column: search_vector

Options:

- Connection: exactly one of ``url`` (a libpq URL; avoid putting a password in a config file),
  ``url_from_env`` (an environment variable holding the URL) or ``connection_id`` (an Airflow
  connection, read only when given). Passwords never appear in errors: the URL's password and
  secret parameters are registered with :mod:`retrieval_eval.safety.redaction`.
- ``table``, optional ``schema``, ``id_column``: identifiers are quoted with
  ``psycopg.sql.Identifier``, so names with spaces, capitals or quotes work as written.
- ``text_columns``: columns concatenated into ``to_tsvector(text_search_config, ...)`` at query
  time; or ``tsvector_column``: a precomputed ``tsvector`` column (faster with a GIN index).
- ``text_search_config`` (default ``english``), ``rank_function`` (``ts_rank``, the default,
  or ``ts_rank_cd``), ``rank_normalization`` (the rank functions' bit mask, default 0).
- ``query_mode``: ``websearch`` (default: ``websearch_to_tsquery``, every word must match,
  ``"quoted phrases"``, ``or``, ``-exclusions``) or ``any`` (a document matching any of the
  question's words qualifies; better for long natural-language questions).

For claim-like questions use ``any`` with ``ts_rank``: under ``websearch`` a claim's every word
rarely occurs in one abstract, and ``ts_rank_cd``'s cover density rewards adjacent terms, which
OR-ed words rarely are (docs/adapters/postgres_fts.md gives SciFact's figures).
- ``document_columns`` (default: ``text_columns``): the columns ``document_texts`` reads
  (joined by a newline, NULLs skipped) to show a candidate's text for judging; with
  ``tsvector_column`` and no ``document_columns`` the adapter offers no texts.
- ``max_concurrency`` (default 4): queries in flight, each on its own pooled connection.
  ``connect_timeout_s`` (default 10).

Edge cases: the question text is always a query parameter, never spliced into SQL. A question
made only of stop words has no lexemes and matches nothing (an empty ranking). Ties in rank are
broken by id, so rankings are deterministic. ``existing_ids`` (dead labels) is one query,
``SELECT id FROM table WHERE id::text = ANY(%s)``, with the ids as one array parameter;
``document_texts`` is one such query too. The table and columns are checked when the
retriever is built (a clear configuration error naming the option); an outage later is recorded
per question.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, model_validator

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.options import BuildContext, OptionsAdapter
from retrieval_eval.retrievers.secrets import airflow_connection, env_secret
from retrieval_eval.safety.redaction import redact, register_credentials, register_query


class PostgresFtsOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    url_from_env: str | None = None
    connection_id: str | None = None
    table: str = Field(min_length=1)
    schema_: str | None = Field(default=None, alias="schema", min_length=1)
    id_column: str = Field(default="id", min_length=1)
    text_columns: list[str] = Field(default_factory=list)
    tsvector_column: str | None = None
    document_columns: list[str] | None = Field(default=None, min_length=1)
    text_search_config: str = "english"
    rank_function: Literal["ts_rank", "ts_rank_cd"] = "ts_rank"
    rank_normalization: int = Field(default=0, ge=0, le=63)
    query_mode: Literal["websearch", "any"] = "websearch"
    max_concurrency: int = Field(default=4, ge=1)
    connect_timeout_s: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _one_of_each(self) -> PostgresFtsOptions:
        sources = [n for n in ("url", "url_from_env", "connection_id") if getattr(self, n)]
        if len(sources) != 1:
            raise ValueError(
                "give exactly one of 'url', 'url_from_env' or 'connection_id' "
                f"(got {', '.join(sources) or 'none'})"
            )
        if bool(self.text_columns) == bool(self.tsvector_column):
            raise ValueError("give exactly one of 'text_columns' (a list) or 'tsvector_column'")
        return self


class PostgresFtsRetriever(OptionsAdapter):
    """Parameterised full-text queries over a small pool of connections."""

    options_model = PostgresFtsOptions

    def __init__(self, identifier: str, options: PostgresFtsOptions, conninfo: str) -> None:
        from psycopg.conninfo import conninfo_to_dict

        self.identifier = identifier
        self.options = options
        self.max_concurrency = options.max_concurrency
        self._conninfo = conninfo
        info = conninfo_to_dict(conninfo)  # a URL's query parameters are among its keys
        register_credentials(str(info.get("user") or ""), str(info.get("password") or ""))
        register_query(info.items())
        # a small pool: the scorer may run each call on a fresh thread (its per-question
        # timeout), so per-thread connections would pile up; idle ones are reused instead
        self._idle: list[Any] = []
        self._lock = threading.Lock()
        self._query = build_query(options)
        self._lookup = build_lookup(options)
        self._texts = build_texts(options)
        if self._texts is not None:
            self.document_texts = self._document_texts

    @classmethod
    def from_checked(
        cls, identifier: str, opts: PostgresFtsOptions, where: str, context: BuildContext
    ) -> Self:
        retriever = cls(identifier, opts, _conninfo(opts, where))
        retriever.check(where)
        return retriever

    def check(self, where: str) -> None:
        """Fail early, naming the option, when the database, table or a column is wrong."""
        import psycopg

        try:
            self._run("check", 0)
            if self._texts is not None:
                self._execute(self._texts, {"ids": []})
        except psycopg.OperationalError as exc:
            raise RetrieverError(
                f"{where}: cannot connect to PostgreSQL: {redact(_first_line(exc))}"
            ) from None
        except psycopg.Error as exc:
            option = {
                "UndefinedTable": "table",
                "InvalidSchemaName": "schema",
                "UndefinedColumn": "text_columns / id_column / tsvector_column / document_columns",
                "UndefinedObject": "text_search_config",
            }.get(type(exc).__name__, "table")
            self.close()
            raise ConfigError(f"{where}.{option}: {redact(_first_line(exc))}") from None

    def retrieve(self, question: str, limit: int) -> list[str]:
        return [str(row[0]) for row in self._answer(self._query, self._params(question, limit))]

    existing_ids_source = "postgres id column"

    def existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are in the id column: one query, the ids one array parameter."""
        asked = sorted(set(ids))
        if not asked:
            return set()
        return {str(row[0]) for row in self._answer(self._lookup, {"ids": asked})}

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The ``document_columns`` of each of ``ids`` in the id column: one query."""
        asked = sorted(set(ids))
        if not asked:
            return {}
        return {
            str(doc): str(text) for doc, text in self._answer(self._texts, {"ids": asked}) if text
        }

    def _params(self, question: str, limit: int) -> dict[str, Any]:
        return {
            "config": self.options.text_search_config,
            "question": question,
            "normalization": self.options.rank_normalization,
            "limit": limit,
        }

    def _run(self, question: str, limit: int) -> list[Any]:
        return self._execute(self._query, self._params(question, limit))

    def _answer(self, query: Any, params: dict[str, Any]) -> list[Any]:
        """:meth:`_execute` for a question or a label check: a PostgreSQL error becomes the one
        ``RuntimeError`` (its type and first line, redacted) the protocol records."""
        import psycopg

        try:
            return self._execute(query, params)
        except psycopg.Error as exc:
            raise RuntimeError(
                f"PostgreSQL {type(exc).__name__}: {redact(_first_line(exc))}"
            ) from None

    def _execute(self, query: Any, params: dict[str, Any]) -> list[Any]:
        """Run a query on an idle connection (or a new one); a failed connection is dropped."""
        import psycopg

        with self._lock:
            conn = self._idle.pop() if self._idle else None
        if conn is None:
            conn = psycopg.connect(
                self._conninfo, autocommit=True, connect_timeout=self.options.connect_timeout_s
            )
        try:
            rows = conn.execute(query, params).fetchall()
        except BaseException:
            conn.close()
            raise
        with self._lock:
            self._idle.append(conn)
        return rows

    def close(self) -> None:
        with self._lock:
            for conn in self._idle:
                conn.close()
            self._idle.clear()

    def __repr__(self) -> str:
        return f"PostgresFtsRetriever({self.identifier!r}, table={self.options.table!r})"


def build_query(options: PostgresFtsOptions) -> Any:
    """The ranking query, identifiers quoted; the question, config and limit stay parameters."""
    from psycopg import sql

    config = sql.SQL("%(config)s::regconfig")
    if options.tsvector_column:
        document: Any = sql.Identifier(options.tsvector_column)
    else:
        text = sql.SQL(" || ' ' || ").join(
            sql.SQL("coalesce({}::text, '')").format(sql.Identifier(c))
            for c in options.text_columns
        )
        document = sql.SQL("to_tsvector({}, {})").format(config, text)
    if options.query_mode == "websearch":
        query = sql.SQL("websearch_to_tsquery({}, %(question)s)").format(config)
    else:
        # every lexeme of the question, OR-ed: to_tsquery('a | b | c')
        query = sql.SQL(
            "to_tsquery({0}, array_to_string(tsvector_to_array(to_tsvector({0}, %(question)s)), "
            "' | '))"
        ).format(config)
    table = _table(options)
    return sql.SQL(
        "SELECT {id}::text FROM {table}, {query} AS q WHERE {document} @@ q "
        "ORDER BY {rank}({document}, q, %(normalization)s) DESC, {id} LIMIT %(limit)s"
    ).format(
        id=sql.Identifier(options.id_column),
        table=table,
        query=query,
        document=document,
        rank=sql.Identifier(options.rank_function),
    )


def build_lookup(options: PostgresFtsOptions) -> Any:
    """The dead-label query: which of the ``%(ids)s`` array are in the id column."""
    from psycopg import sql

    return sql.SQL(
        "SELECT DISTINCT {id}::text FROM {table} WHERE {id}::text = ANY(%(ids)s)"
    ).format(id=sql.Identifier(options.id_column), table=_table(options))


def build_texts(options: PostgresFtsOptions) -> Any:
    """The ``document_texts`` query (None without columns to read): the ``document_columns``
    (else ``text_columns``) of each id of the ``%(ids)s`` array, joined by a newline."""
    from psycopg import sql

    columns = options.document_columns or options.text_columns
    if not columns:
        return None
    text = sql.SQL(", ").join(sql.SQL("{}::text").format(sql.Identifier(c)) for c in columns)
    return sql.SQL(
        "SELECT {id}::text, concat_ws(E'\\n', {text}) FROM {table} WHERE {id}::text = ANY(%(ids)s)"
    ).format(id=sql.Identifier(options.id_column), text=text, table=_table(options))


def _table(options: PostgresFtsOptions) -> Any:
    from psycopg import sql

    if options.schema_:
        return sql.Identifier(options.schema_, options.table)
    return sql.Identifier(options.table)


def _conninfo(opts: PostgresFtsOptions, where: str) -> str:
    if opts.url:
        return opts.url
    if opts.url_from_env:
        return env_secret(opts.url_from_env, f"{where}.url_from_env")
    from psycopg.conninfo import make_conninfo

    assert opts.connection_id is not None
    conn = airflow_connection(opts.connection_id, f"{where}.connection_id")
    parts = {
        "host": conn.host,
        "port": conn.port,
        "user": conn.login,
        "password": conn.password,
        "dbname": conn.schema,
    }
    return make_conninfo(**{k: v for k, v in parts.items() if v})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__

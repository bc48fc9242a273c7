"""The ``chroma`` adapter: a Chroma collection, persistent on disk or on a Chroma server.

.. code-block:: yaml

    retrievers:
      docs_chroma:
        type: chroma
        path: .chroma/                   # a PersistentClient folder; or host: chroma, port: 8000
        collection: docs
        id_field: doc_id                 # metadata key holding the document id
        embedding: default               # all-MiniLM-L6-v2, offline (see retrievers.embedding)

Install ``pip install 'retrieval-eval[chroma]'``. Options (with those of
:mod:`retrieval_eval.retrievers.vector_store`: ``collection``, ``embedding``, ``id_field``,
``separator`` / ``pattern``, ``fetch_multiplier``, ``max_concurrency``, ``timeout_s``):

- exactly one of ``path`` (a persistent folder, relative to the config) or ``host`` (with
  ``port``, default 8000, and ``ssl``, default false);
- ``headers_from_env`` (header -> environment variable, e.g. ``{X-Chroma-Token: CHROMA_TOKEN}``)
  or ``connection_id`` (an Airflow connection: host, port, and its password sent as
  ``X-Chroma-Token``); values are masked in every error; ``tenant`` and ``database``;
- ``where``: a Chroma metadata filter (``{lang: en}``).

Chroma's own record id is the document id unless ``id_field`` names a metadata key; the text
is the record's document (``text_field`` does not apply). Dead labels are one ``get`` by ids or
by ``{id_field: {$in: [...]}}``. The questions are embedded here, never by the collection's own
embedding function. ``timeout_s`` bounds each HTTP request to a server; a persistent client
defaults to ``max_concurrency: 1``, a server to 4.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from pydantic import Field, model_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.extras import require
from retrieval_eval.retrievers.options import BuildContext, ConfigPath, parse_options
from retrieval_eval.retrievers.vector_store import (
    Record,
    StoreOptions,
    VectorStoreRetriever,
    id_value,
    payload_field,
)

PAGE = 1000


class ChromaOptions(StoreOptions):
    path: ConfigPath | None = None
    host: str | None = None
    port: int = 8000
    ssl: bool = False
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    connection_id: str | None = None
    tenant: str | None = None
    database: str | None = None
    where: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_location(self) -> ChromaOptions:
        if self.path is not None and (self.host or self.connection_id):
            raise ValueError("give either 'path' (a persistent folder) or 'host' / 'connection_id'")
        if self.path is None and not self.host and not self.connection_id:
            raise ValueError("give 'path' (a persistent folder) or 'host' (a Chroma server)")
        return self


class ChromaRetriever(VectorStoreRetriever):
    kind = "Chroma"

    def __init__(
        self, identifier: str, options: ChromaOptions, client: Any, where: str, **kw: Any
    ) -> None:
        self.remote = options.path is None
        super().__init__(identifier, options, **kw)
        self.opts = options
        self.client = client
        self.where = where
        self.collection = self._collection()
        self.check_dimension()
        self._check_id_field()

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> ChromaRetriever:
        where = f"{context.source}: retrievers.{identifier}"
        chromadb = require("chroma", where)
        opts = parse_options(ChromaOptions, identifier, options, context)
        tenancy = {k: v for k, v in (("tenant", opts.tenant), ("database", opts.database)) if v}
        if opts.path is not None:
            if not opts.path.is_dir():
                raise ConfigError(f"{where}.path: no Chroma folder at {opts.path}")
            client = chromadb.PersistentClient(path=str(opts.path), **tenancy)
        else:
            host, port, headers = _server(opts, where)
            try:
                client = chromadb.HttpClient(
                    host=host, port=port, ssl=opts.ssl, headers=headers, **tenancy
                )
            except Exception as exc:  # the client asks the server for its tenant at once
                raise _unreachable(f"{where}.host", exc) from None
            _bound_requests(client, opts.timeout_s)
        embedder = cls.embedder_for(opts, identifier, context)
        return cls(identifier, opts, client, where, embedder=embedder)

    def _collection(self) -> Any:
        name = self.opts.collection
        location = f"{self.where}.path" if self.opts.path is not None else f"{self.where}.host"
        try:
            names = [getattr(c, "name", c) for c in self.client.list_collections()]
        except Exception as exc:
            raise _unreachable(location, exc) from None
        if name not in names:
            raise ConfigError(
                f"{self.where}.collection: no collection {name!r} in Chroma; "
                f"collections: {', '.join(sorted(names)) or 'none'}"
            )
        # no embedding function: questions are embedded by the adapter, never by Chroma
        return self.client.get_collection(name, embedding_function=None)

    def _check_id_field(self) -> None:
        field = self.opts.id_field
        if field is None:
            return
        sample = self.collection.get(limit=1, include=["metadatas"])
        metadatas = sample.get("metadatas") or []
        if metadatas and payload_field(metadatas[0], field) is None:
            keys = ", ".join(sorted(metadatas[0] or {})) or "none"
            raise ConfigError(
                f"{self.where}.id_field: the records of {self.opts.collection!r} have no "
                f"metadata key {field!r}; metadata keys: {keys}"
            )

    def _dimension(self) -> int | None:
        sample = self.collection.get(limit=1, include=["embeddings"])
        embeddings = sample.get("embeddings")
        return None if embeddings is None or len(embeddings) == 0 else len(embeddings[0])

    def _records(self, ids: list[str], metadatas: Any, documents: Any) -> list[Record]:
        field = self.opts.id_field
        records = []
        for n, record_id in enumerate(ids):
            raw = record_id if field is None else payload_field((metadatas or {})[n], field)
            text = documents[n] if documents else None
            records.append((id_value(raw, self.where), text if isinstance(text, str) else None))
        return records

    def _search(self, vector: list[float], k: int) -> list[Record]:
        result = self.collection.query(
            query_embeddings=[vector],
            n_results=k,
            where=self.opts.where,
            include=["metadatas", "documents"],
        )
        return self._records(
            result["ids"][0],
            (result.get("metadatas") or [None])[0],
            (result.get("documents") or [None])[0],
        )

    def _get(self, **query: Any) -> list[Record]:
        result = self.collection.get(include=["metadatas", "documents"], **query)
        return self._records(result["ids"], result.get("metadatas"), result.get("documents"))

    def _find(self, ids: list[str]) -> Iterable[Record]:
        if not ids:
            return []
        if self.opts.id_field is None:
            return self._get(ids=ids)
        return self._get(where={self.opts.id_field: {"$in": ids}})

    def _scan(self) -> Iterator[Record]:
        offset = 0
        while page := self._get(limit=PAGE, offset=offset):
            yield from page
            offset += len(page)


def _server(opts: ChromaOptions, where: str) -> tuple[str, int, dict[str, str]]:
    from retrieval_eval.retrievers.secrets import airflow_connection, env_secret
    from retrieval_eval.safety.redaction import register_header

    host, port = opts.host, opts.port
    headers = {}
    for header, variable in opts.headers_from_env.items():
        headers[header] = env_secret(variable, f"{where}.headers_from_env.{header}")
        register_header(headers[header])
    if opts.connection_id:
        conn = airflow_connection(opts.connection_id, f"{where}.connection_id")
        host = host or conn.host
        port = conn.port or port
        if conn.password:
            headers["X-Chroma-Token"] = conn.password
    if not host:
        raise ConfigError(f"{where}.connection_id: the connection has no host; set one or 'host'")
    return host, port, headers


def _bound_requests(client: Any, timeout_s: float) -> None:
    # chromadb's HttpClient builds its httpx session without a timeout and takes none: set it
    # on that session so a stalled server ends a call after timeout_s
    import httpx

    session = getattr(getattr(client, "_server", None), "_session", None)
    if isinstance(session, httpx.Client):
        session.timeout = httpx.Timeout(timeout_s)


def _unreachable(option: str, exc: Exception) -> ConfigError:
    from retrieval_eval.safety.redaction import redact

    return ConfigError(
        f"{option}: cannot reach Chroma ({type(exc).__name__}: {redact(str(exc))[:300]}); "
        "check the address and that the server is up"
    )

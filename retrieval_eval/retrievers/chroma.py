"""The ``chroma`` adapter: a Chroma collection, persistent on disk or on a Chroma server.

.. code-block:: yaml

    retrievers:
      docs_chroma:
        type: chroma
        path: .chroma/                   # a PersistentClient folder; or host: chroma, port: 8000
        collection: docs
        id_field: doc_id                 # metadata key holding the document id
        embedding: default               # all-MiniLM-L6-v2, offline (see retrievers.embedding)

Install ``pip install 'rag-retrieval-eval[chroma]'``. Options (with those of
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

from collections.abc import Iterable, Iterator
from types import ModuleType
from typing import Any

from pydantic import Field

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.vector_store import (
    FolderOrServerOptions,
    Record,
    VectorStoreRetriever,
    payload_field,
)

PAGE = 1000


class ChromaOptions(FolderOrServerOptions):
    server_option = "host"
    local_what = ("a persistent folder", "a persistent folder")
    server_what = "a Chroma server"

    host: str | None = None
    port: int = 8000
    ssl: bool = False
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    tenant: str | None = None
    database: str | None = None
    where: dict[str, Any] | None = None


class ChromaRetriever(VectorStoreRetriever):
    kind = "Chroma"
    type_name = "chroma"
    options_model = ChromaOptions
    options: ChromaOptions

    @classmethod
    def _connect(cls, chromadb: ModuleType, opts: ChromaOptions, where: str) -> Any:
        tenancy = {k: v for k, v in (("tenant", opts.tenant), ("database", opts.database)) if v}
        if opts.path is not None:
            folder = cls._folder(opts.path, f"{where}.path")
            return chromadb.PersistentClient(path=str(folder), **tenancy)
        host, port, headers = _server(opts, where)
        try:
            client = chromadb.HttpClient(
                host=host, port=port, ssl=opts.ssl, headers=headers, **tenancy
            )
        except Exception as exc:  # the client asks the server for its tenant at once
            raise cls._unreachable(f"{where}.host", exc) from None
        _bound_requests(client, opts.timeout_s)
        return client

    def _open(self, client: Any) -> None:
        self.client = client
        name = self.options.collection
        location = f"{self.where}.{self.options.location_option}"
        try:
            names = [getattr(c, "name", c) for c in self.client.list_collections()]
        except Exception as exc:
            raise self._unreachable(location, exc) from None
        if name not in names:
            raise self._missing_collection(self.where, name, names)
        # no embedding function: questions are embedded by the adapter, never by Chroma
        self.collection = self.client.get_collection(name, embedding_function=None)

    def _check_id_field(self) -> None:
        def sample() -> list[Any]:
            return self.collection.get(limit=1, include=["metadatas"]).get("metadatas") or []

        self._check_payload_id_field(sample, "records", "metadata key")

    def _dimension(self) -> int | None:
        sample = self.collection.get(limit=1, include=["embeddings"])
        embeddings = sample.get("embeddings")
        return None if embeddings is None or len(embeddings) == 0 else len(embeddings[0])

    def _records(self, ids: list[str], metadatas: Any, documents: Any) -> list[Record]:
        field = self.options.id_field
        records = []
        for n, record_id in enumerate(ids):
            raw = record_id if field is None else payload_field((metadatas or {})[n], field)
            text = documents[n] if documents else None
            records.append(self._as_record(raw, text))
        return records

    def _search(self, vector: list[float], k: int) -> list[Record]:
        result = self.collection.query(
            query_embeddings=[vector],
            n_results=k,
            where=self.options.where,
            # a ranking needs the ids alone: the metadata only when it holds them
            include=["metadatas"] if self.options.id_field is not None else [],
        )
        return self._records(result["ids"][0], (result.get("metadatas") or [None])[0], None)

    def _get(self, **query: Any) -> list[Record]:
        result = self.collection.get(include=["metadatas", "documents"], **query)
        return self._records(result["ids"], result.get("metadatas"), result.get("documents"))

    def _find(self, ids: list[str]) -> Iterable[Record]:
        if not ids:
            return []
        if self.options.id_field is None:
            return self._get(ids=ids)
        return self._get(where={self.options.id_field: {"$in": ids}})

    def _scan(self) -> Iterator[Record]:
        offset = 0
        while page := self._get(limit=PAGE, offset=offset):
            yield from page
            offset += len(page)


def _server(opts: ChromaOptions, where: str) -> tuple[str, int, dict[str, str]]:
    from retrieval_eval.retrievers.secrets import airflow_connection, env_headers

    host, port = opts.host, opts.port
    headers = env_headers(opts.headers_from_env, f"{where}.headers_from_env")
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

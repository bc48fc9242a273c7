"""The ``qdrant`` adapter: a Qdrant collection, embedded (local mode) or on a server.

.. code-block:: yaml

    retrievers:
      docs_qdrant:
        type: qdrant
        path: .qdrant/                   # local mode; or url: http://qdrant:6333
        collection: docs
        id_field: doc_id                 # payload key holding the document id
        embedding: default               # all-MiniLM-L6-v2, offline (see retrievers.embedding)

Install ``pip install 'rag-retrieval-eval[qdrant]'``. Options (with those of
:mod:`retrieval_eval.retrievers.vector_store`: ``collection``, ``embedding``, ``id_field``,
``text_field``, ``separator`` / ``pattern``, ``fetch_multiplier``, ``max_concurrency``,
``timeout_s``):

- exactly one of ``path`` (a local-mode folder, relative to the config) or ``url``;
- ``api_key_from_env`` (an environment variable) or ``connection_id`` (an Airflow connection:
  its host, port and schema make the url when ``url`` is not given, its password is the API
  key); the key is masked in every error;
- ``vector_name``: the named vector to search, for collections with several;
- ``filter``: a Qdrant filter as JSON (``{must: [{key: lang, match: {value: en}}]}``).

Point ids are ints or UUIDs, so the document id usually lives in the payload (``id_field``);
without ``id_field`` the point id is the document id. Dead labels ask Qdrant for the points whose
``id_field`` matches any of the labels (a payload index on it keeps that fast on large
collections). ``timeout_s`` is the client's per-request timeout on a server; local mode (one
process holds the folder) defaults to ``max_concurrency: 1``, a server to 4.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Mapping
from types import ModuleType
from typing import Any

from pydantic import model_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.vector_store import (
    FolderOrServerOptions,
    Record,
    VectorStoreRetriever,
    env_api_key,
    payload_field,
)

SCROLL_PAGE = 256


class QdrantOptions(FolderOrServerOptions):
    server_option = "url"
    local_what = ("local mode", "a local-mode folder")
    server_what = "a Qdrant server"

    url: str | None = None
    api_key_from_env: str | None = None
    vector_name: str | None = None
    filter: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_key(self) -> QdrantOptions:
        if self.api_key_from_env and self.connection_id:
            raise ValueError("give either 'api_key_from_env' or 'connection_id', not both")
        return self


class QdrantRetriever(VectorStoreRetriever):
    kind = "Qdrant"
    type_name = "qdrant"
    options_model = QdrantOptions
    options: QdrantOptions

    @classmethod
    def _connect(cls, qdrant_client: ModuleType, opts: QdrantOptions, where: str) -> Any:
        url, api_key = opts.url, env_api_key(opts.api_key_from_env, where)
        if opts.connection_id:
            from retrieval_eval.retrievers.secrets import airflow_connection

            conn = airflow_connection(opts.connection_id, f"{where}.connection_id")
            api_key = conn.password or None
            if not url:
                url = _connection_url(conn, f"{where}.connection_id")
        if opts.path is not None:
            folder = cls._folder(opts.path, f"{where}.path", "local-mode folder")
            return qdrant_client.QdrantClient(path=str(folder))
        return qdrant_client.QdrantClient(
            url=url,
            api_key=api_key,
            timeout=max(1, round(opts.timeout_s)),
            check_compatibility=False,
        )

    @staticmethod
    def _disconnect(client: Any) -> None:
        client.close()

    def _open(self, client: Any) -> None:
        from qdrant_client import models

        self.client = client
        self._models = models
        opts = self.options
        self._filter = (
            None if opts.filter is None else self._models.Filter.model_validate(opts.filter)
        )
        where_location = f"{self.where}.{opts.location_option}"
        try:
            exists = self.client.collection_exists(opts.collection)
        except Exception as exc:
            raise self._unreachable(where_location, exc) from None
        if not exists:
            names = [c.name for c in self.client.get_collections().collections]
            raise self._missing_collection(self.where, opts.collection, names)

    def _check_id_field(self) -> None:
        def sample() -> list[Any]:
            points, _ = self.client.scroll(self.options.collection, limit=1, with_payload=True)
            return [point.payload for point in points]

        self._check_payload_id_field(sample, "points", "payload field")

    def _dimension(self) -> int | None:
        vectors = self.client.get_collection(self.options.collection).config.params.vectors
        if isinstance(vectors, Mapping):
            name = self.options.vector_name
            if name is None or name not in vectors:
                raise ConfigError(
                    f"{self.where}.vector_name: collection {self.options.collection!r} has named "
                    f"vectors {', '.join(sorted(vectors))}; name the one to search"
                )
            return int(vectors[name].size)
        return int(vectors.size) if vectors is not None else None

    def _record(self, point: Any) -> Record:
        payload = point.payload or {}
        raw = (
            point.id
            if self.options.id_field is None
            else payload_field(payload, self.options.id_field)
        )
        text = payload_field(payload, self.options.text_field) if self.options.text_field else None
        return self._as_record(raw, text)

    def _payload(self, with_text: bool = True) -> list[str] | bool:
        text_field = self.options.text_field if with_text else None
        fields = {f.split(".")[0] for f in (self.options.id_field, text_field) if f}
        return sorted(fields) or False

    def _search(self, vector: list[float], k: int) -> list[Record]:
        response = self.client.query_points(
            self.options.collection,
            query=vector,
            using=self.options.vector_name,
            query_filter=self._filter,
            limit=k,
            with_payload=self._payload(with_text=False),  # a ranking needs the ids alone
        )
        return [self._record(p) for p in response.points]

    def _find(self, ids: list[str]) -> Iterable[Record]:
        if self.options.id_field is None:
            point_ids = [p for p in map(_point_id, ids) if p is not None]
            if not point_ids:
                return []
            points = self.client.retrieve(
                self.options.collection, ids=point_ids, with_payload=self._payload()
            )
            return [self._record(p) for p in points]
        models = self._models
        condition = models.FieldCondition(key=self.options.id_field, match=models.MatchAny(any=ids))
        return self._scroll(models.Filter(must=[condition]))

    def _scan(self) -> Iterator[Record]:
        return self._scroll(None)

    def _scroll(self, scroll_filter: Any) -> Iterator[Record]:
        offset = None
        while True:
            points, offset = self.client.scroll(
                self.options.collection,
                scroll_filter=scroll_filter,
                limit=SCROLL_PAGE,
                offset=offset,
                with_payload=self._payload(),
            )
            yield from (self._record(p) for p in points)
            if offset is None:
                return

    def close(self) -> None:
        self.client.close()


def _point_id(value: str) -> int | str | None:
    """A document id as a Qdrant point id (an unsigned int or a UUID), or None if it is neither."""
    if value.isdigit():
        return int(value)
    try:
        return str(uuid.UUID(value))
    except ValueError:
        return None


def _connection_url(conn: Any, where: str) -> str:
    if not conn.host:
        raise ConfigError(f"{where}: the connection has no host; set one or give 'url'")
    scheme = conn.schema or "http"
    host = conn.host if "://" in conn.host else f"{scheme}://{conn.host}"
    return f"{host}:{conn.port}" if conn.port else host

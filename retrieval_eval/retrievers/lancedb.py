"""The ``lancedb`` adapter: a LanceDB table in a folder or at a LanceDB URI.

.. code-block:: yaml

    retrievers:
      docs_lance:
        type: lancedb
        uri: .lancedb/                   # a folder (relative to the config) or db://... / s3://...
        collection: docs                 # the table
        id_field: doc_id                 # the column holding the document id (default: id)
        embedding: default               # all-MiniLM-L6-v2, offline (see retrievers.embedding)

Install ``pip install 'rag-retrieval-eval[lancedb]'``. Options (with those of
:mod:`retrieval_eval.retrievers.vector_store`: ``collection``, ``embedding``, ``id_field``,
``text_field``, ``separator`` / ``pattern``, ``fetch_multiplier``, ``max_concurrency``,
``timeout_s``):

- ``uri``: a local folder, or a remote URI (``db://``, ``s3://``, ...);
- ``api_key_from_env``: for LanceDB Cloud (masked in every error);
- ``vector_column`` (default ``vector``), ``metric`` (``cosine``, the default, ``l2`` or ``dot``:
  the one the table's index was built for);
- ``where``: an SQL filter applied before the search (``lang = 'en'``).

Every column is a field: ``id_field`` defaults to ``id``, ``text_field`` to ``text``. Dead labels
are one filtered scan (``id_field IN (...)``), which a scalar index on the column serves.
A local folder defaults to ``max_concurrency: 1``, a remote URI to 4.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import ModuleType
from typing import Any, Literal

from pydantic import ValidationInfo, field_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.options import resolve_path
from retrieval_eval.retrievers.vector_store import (
    Record,
    StoreOptions,
    VectorStoreRetriever,
    env_api_key,
)

REMOTE = re.compile(r"^[a-z][a-z0-9+.-]*://")
BATCH = 500


class LanceDbOptions(StoreOptions):
    uri: str
    id_field: str | None = "id"
    api_key_from_env: str | None = None
    vector_column: str = "vector"
    metric: Literal["cosine", "l2", "dot"] = "cosine"
    where: str | None = None

    @property
    def remote(self) -> bool:
        return bool(REMOTE.match(self.uri))

    @field_validator("uri")
    @classmethod
    def _relative_to_config(cls, value: str, info: ValidationInfo) -> str:
        # a folder resolves against the config file's folder; a remote URI is kept as it is
        return value if REMOTE.match(value) else str(resolve_path(Path(value), info))


class LanceDbRetriever(VectorStoreRetriever):
    kind = "LanceDB"
    type_name = "lancedb"
    options_model = LanceDbOptions
    options: LanceDbOptions

    @classmethod
    def _connect(cls, lancedb: ModuleType, opts: LanceDbOptions, where: str) -> Any:
        kwargs: dict[str, Any] = {}
        if not opts.remote:
            cls._folder(Path(opts.uri), f"{where}.uri")
        if (api_key := env_api_key(opts.api_key_from_env, where)) is not None:
            kwargs["api_key"] = api_key
        try:
            db = lancedb.connect(opts.uri, **kwargs)
            names = _table_names(db)
        except Exception as exc:
            raise cls._unreachable(f"{where}.uri", exc, verb="open") from None
        if opts.collection not in names:
            raise cls._missing_collection(where, opts.collection, names, noun="table")
        return db.open_table(opts.collection)

    def _open(self, table: Any) -> None:
        self.table = table
        opts = self.options
        if opts.id_field is None:
            raise ConfigError(f"{self.where}.id_field: name the column that holds the document id")
        for option in ("id_field", "text_field", "vector_column"):
            column = getattr(opts, option)
            if column is not None and column not in table.schema.names:
                raise self._missing_field(
                    option,
                    f"table {opts.collection!r} has",
                    "column",
                    column,
                    table.schema.names,
                )

    def _dimension(self) -> int | None:
        kind = self.table.schema.field(self.options.vector_column).type
        size = getattr(kind, "list_size", None)
        return int(size) if size and size > 0 else None

    def _select(self, with_text: bool = True) -> list[str]:
        text_field = self.options.text_field if with_text else None
        return [c for c in (self.options.id_field, text_field) if c]

    def _record(self, row: Mapping[str, Any]) -> Record:
        field = self.options.id_field
        text = row.get(self.options.text_field) if self.options.text_field else None
        return self._as_record(row.get(field) if field else None, text)

    def _search(self, vector: list[float], k: int) -> list[Record]:
        query = (
            self.table.search(vector, vector_column_name=self.options.vector_column)
            .distance_type(self.options.metric)
            .select(self._select(with_text=False))  # a ranking needs the ids alone
            .limit(k)
        )
        if hasattr(query, "disable_scoring_autoprojection"):
            query = query.disable_scoring_autoprojection()
        if self.options.where:
            query = query.where(self.options.where, prefilter=True)
        return [self._record(row) for row in query.to_list()]

    def _rows(self, where: str | None) -> list[Record]:
        query = self.table.search().select(self._select())
        if where:
            query = query.where(where)
        return [self._record(row) for row in query.limit(None).to_list()]

    def _find(self, ids: list[str]) -> Iterable[Record]:
        records: list[Record] = []
        column = f"`{self.options.id_field}`"
        for start in range(0, len(ids), BATCH):
            quoted = ", ".join(_sql_text(i) for i in ids[start : start + BATCH])
            records += self._rows(f"{column} IN ({quoted})")
        return records

    def _scan(self) -> Iterator[Record]:
        return iter(self._rows(None))


def _table_names(db: Any) -> list[str]:
    listing = db.list_tables()
    names = getattr(listing, "tables", listing)
    return [str(n) for n in names]


def _sql_text(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"

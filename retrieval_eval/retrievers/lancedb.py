"""The ``lancedb`` adapter: a LanceDB table in a folder or at a LanceDB URI.

.. code-block:: yaml

    retrievers:
      docs_lance:
        type: lancedb
        uri: .lancedb/                   # a folder (relative to the config) or db://... / s3://...
        collection: docs                 # the table
        id_field: doc_id                 # the column holding the document id (default: id)
        embedding: default               # all-MiniLM-L6-v2, offline (see retrievers.embedding)

Install ``pip install 'retrieval-eval[lancedb]'``. Options (with those of
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
from typing import Any, Literal

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.extras import require
from retrieval_eval.retrievers.options import BuildContext, parse_options
from retrieval_eval.retrievers.vector_store import (
    Record,
    StoreOptions,
    VectorStoreRetriever,
    id_value,
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


class LanceDbRetriever(VectorStoreRetriever):
    kind = "LanceDB"

    def __init__(
        self, identifier: str, options: LanceDbOptions, table: Any, where: str, **kw: Any
    ) -> None:
        self.remote = bool(REMOTE.match(options.uri))
        super().__init__(identifier, options, **kw)
        self.opts = options
        self.table = table
        self.where = where
        self._columns = set(table.schema.names)
        if options.id_field is None:
            raise ConfigError(f"{where}.id_field: name the column that holds the document id")
        for option in ("id_field", "text_field", "vector_column"):
            column = getattr(options, option)
            if column is not None and column not in self._columns:
                raise ConfigError(
                    f"{where}.{option}: table {options.collection!r} has no column {column!r}; "
                    f"columns: {', '.join(table.schema.names)}"
                )
        self.check_dimension()

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> LanceDbRetriever:
        where = f"{context.source}: retrievers.{identifier}"
        lancedb = require("lancedb", where)
        opts = parse_options(LanceDbOptions, identifier, options, context)
        uri = opts.uri
        kwargs: dict[str, Any] = {}
        if not REMOTE.match(uri):
            folder = Path(uri).expanduser()
            folder = folder if folder.is_absolute() else context.base_dir / folder
            if not folder.is_dir():
                raise ConfigError(f"{where}.uri: no LanceDB folder at {folder}")
            uri = str(folder)
        if opts.api_key_from_env:
            from retrieval_eval.retrievers.secrets import env_secret
            from retrieval_eval.safety.redaction import register_secret

            kwargs["api_key"] = env_secret(opts.api_key_from_env, f"{where}.api_key_from_env")
            register_secret(kwargs["api_key"])
        try:
            db = lancedb.connect(uri, **kwargs)
            names = _table_names(db)
        except Exception as exc:
            from retrieval_eval.safety.redaction import redact

            raise ConfigError(
                f"{where}.uri: cannot open LanceDB ({type(exc).__name__}: {redact(str(exc))[:300]})"
            ) from None
        if opts.collection not in names:
            raise ConfigError(
                f"{where}.collection: no table {opts.collection!r} in LanceDB; "
                f"tables: {', '.join(sorted(names)) or 'none'}"
            )
        embedder = cls.embedder_for(opts, identifier, context)
        return cls(identifier, opts, db.open_table(opts.collection), where, embedder=embedder)

    def _dimension(self) -> int | None:
        kind = self.table.schema.field(self.opts.vector_column).type
        size = getattr(kind, "list_size", None)
        return int(size) if size and size > 0 else None

    def _select(self) -> list[str]:
        return [c for c in (self.opts.id_field, self.opts.text_field) if c]

    def _record(self, row: Mapping[str, Any]) -> Record:
        field = self.opts.id_field
        text = row.get(self.opts.text_field) if self.opts.text_field else None
        return id_value(row.get(field) if field else None, self.where), (
            text if isinstance(text, str) else None
        )

    def _search(self, vector: list[float], k: int) -> list[Record]:
        query = (
            self.table.search(vector, vector_column_name=self.opts.vector_column)
            .distance_type(self.opts.metric)
            .select(self._select())
            .limit(k)
        )
        if hasattr(query, "disable_scoring_autoprojection"):
            query = query.disable_scoring_autoprojection()
        if self.opts.where:
            query = query.where(self.opts.where, prefilter=True)
        return [self._record(row) for row in query.to_list()]

    def _rows(self, where: str | None) -> list[Record]:
        query = self.table.search().select(self._select())
        if where:
            query = query.where(where)
        return [self._record(row) for row in query.limit(None).to_list()]

    def _find(self, ids: list[str]) -> Iterable[Record]:
        records: list[Record] = []
        column = f"`{self.opts.id_field}`"
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

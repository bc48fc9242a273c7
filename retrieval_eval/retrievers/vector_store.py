"""What the vector-store adapters (``qdrant``, ``chroma``, ``lancedb``) and the framework adapters
(``llamaindex``, ``haystack``) share: one implementation of their options, ids and lookups.

:class:`StoreRetriever` (all five) builds the adapter (the extra required, the options checked,
then each kind's ``_build``), turns stored id values into document ids, and answers
``existing_ids`` and ``document_texts`` from two calls each adapter implements on its own client:
find records by document id (the store's own filter, no full scan) and scan every record (only
where chunk ids must be mapped). :class:`VectorStoreRetriever` (the three stores) opens the client
(each store's ``_connect``), builds the query embedder (:mod:`.embedding`), checks the collection,
its vector dimension and the id field before the first question, and searches: each question
embedded, one search by vector. :class:`FactoryRetriever` (the two frameworks) builds the object
the user's ``factory`` names.

Ids: ``id_field`` names the payload / metadata field (a column in LanceDB) that holds the document
id; unset, the store's own record id is the document id. Several records (chunks) may hold one
document id: the ranking keeps each document once, at its best chunk, and ``document_texts``
joins its chunks' texts. When the field holds chunk ids (``guide.md#3``), ``separator`` or
``pattern`` maps them as ``chunked`` does; ``existing_ids`` and ``document_texts`` then scan the
collection once, since no store filters on a prefix of an id.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar, Self

from pydantic import ConfigDict, Field, model_validator

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.chunking import ChunkRule
from retrieval_eval.retrievers.embedding import EmbeddingOptions, QueryEmbedder, build_embedder
from retrieval_eval.retrievers.extras import require
from retrieval_eval.retrievers.options import BuildContext, ConfigPath, ImportPaths, parse_options

# a record as a store returns it: (the id value it holds, its text or None)
Record = tuple[str, str | None]


class AdapterOptions(ChunkRule):
    """Options every adapter here takes: the chunk rule, overfetch and concurrency."""

    model_config = ConfigDict(extra="forbid")

    fetch_multiplier: int = Field(default=1, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)
    paths: ImportPaths = Field(default_factory=list)
    """Folders put on `sys.path` (relative to the config's folder) before the `factory` or the
    `embedding` function is imported: a module kept beside the config, as `type: python` does."""


class StoreOptions(AdapterOptions):
    collection: str = Field(min_length=1)
    embedding: EmbeddingOptions
    id_field: str | None = None
    text_field: str | None = "text"
    timeout_s: float = Field(default=10.0, gt=0)

    @property
    def remote(self) -> bool:
        """A server (4 calls at once by default) rather than an embedded store (1)."""
        raise NotImplementedError


class FolderOrServerOptions(StoreOptions):
    """A store embedded in a folder (``path``) or on a server (the option ``server_option``, or
    an Airflow connection): exactly one of them."""

    server_option: ClassVar[str]  # "url"
    local_what: ClassVar[tuple[str, str]]  # the folder, as each message says it
    server_what: ClassVar[str]  # "a Qdrant server"

    path: ConfigPath | None = None
    connection_id: str | None = None

    @property
    def remote(self) -> bool:
        return self.path is None

    @property
    def location_option(self) -> str:
        """The option that says where the store is (``path``, else the server option), which an
        error reaching it names."""
        return "path" if self.path is not None else self.server_option

    @model_validator(mode="after")
    def _one_location(self) -> Self:
        server = getattr(self, self.server_option)
        if self.path is not None and (server or self.connection_id):
            raise ValueError(
                f"give either 'path' ({self.local_what[0]}) or '{self.server_option}' / "
                "'connection_id'"
            )
        if self.path is None and not server and not self.connection_id:
            raise ValueError(
                f"give 'path' ({self.local_what[1]}) or '{self.server_option}' ({self.server_what})"
            )
        return self


class FactoryOptions(AdapterOptions):
    """A framework adapter's user code: ``factory`` (``module:attribute``) and its ``kwargs``."""

    factory: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    id_key: str | None = Field(default=None, min_length=1)


def query_embedder(opts: Any, context: BuildContext, where: str) -> QueryEmbedder:
    """The embedder of ``opts.embedding``, its function imported with ``opts.paths``."""
    return build_embedder(
        opts.embedding, base_dir=context.base_dir, where=f"{where}.embedding", paths=opts.paths
    )


def env_api_key(variable: str | None, where: str) -> str | None:
    """The API key in the environment variable ``variable`` (the option ``api_key_from_env``;
    masked in every error), or None when none is named."""
    if not variable:
        return None
    from retrieval_eval.retrievers.secrets import env_key

    return env_key(variable, f"{where}.api_key_from_env")


def usable_id(value: Any) -> str | None:
    """A stored id as the string the scorer compares (ints as their digits); None if unusable."""
    if isinstance(value, str) and value:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return None


def payload_field(payload: Mapping[str, Any] | None, field: str) -> Any:
    """``payload[field]``, where ``field`` may be dotted (``meta.doc_id``)."""
    value: Any = payload or {}
    for part in field.split("."):
        if not isinstance(value, Mapping) or part not in value:
            return None
        value = value[part]
    return value


class StoreRetriever:
    """Stored id values as document ids (chunks mapped), dead labels and texts by the store."""

    type_name: ClassVar[str]  # the adapter type and its extra: "qdrant"
    options_model: ClassVar[type[AdapterOptions]]

    def __init__(
        self, identifier: str, options: AdapterOptions, where: str, default_concurrency: int = 1
    ) -> None:
        self.identifier = identifier
        self.where = where
        self.mapper = options.mapper()
        self.fetch_multiplier = options.fetch_multiplier
        self.max_concurrency = options.max_concurrency or default_concurrency

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> Self:
        """The extra's module first (else the error naming its pip command), then the options
        checked; every error starts with ``<config>: retrievers.<id>``."""
        where = context.where(identifier)
        module = require(cls.type_name, where)
        opts = parse_options(cls.options_model, identifier, options, context)
        return cls._build(identifier, module, opts, where, context)

    @classmethod
    def _build(
        cls, identifier: str, module: ModuleType, options: Any, where: str, context: BuildContext
    ) -> Self:
        """The retriever from its checked options and the extra's ``module``."""
        raise NotImplementedError

    def _find(self, ids: list[str]) -> Iterable[Record]:
        """The records whose id value is one of ``ids`` (the store's own filter)."""
        raise NotImplementedError

    def _scan(self) -> Iterable[Record]:
        """Every record (used only when chunk ids are mapped)."""
        raise NotImplementedError

    def _document(self, value: str) -> str:
        return self.mapper.document_id(value) if self.mapper is not None else value

    def _ranking(self, values: Iterable[str], limit: int) -> list[str]:
        """Stored id values best first -> distinct document ids, each at its best chunk."""
        from retrieval_eval.retrievers.ranking import collapse

        return collapse([self._document(value) for value in values])[:limit]

    def _records_of(self, ids: list[str]) -> Iterable[Record]:
        if self.mapper is None:
            return self._find(ids)
        wanted = set(ids)
        return (r for r in self._scan() if self._document(r[0]) in wanted)

    def _existing_ids(self, ids: Iterable[str]) -> set[str]:
        """Which of ``ids`` are document ids in the store (dead labels)."""
        asked = list(dict.fromkeys(ids))
        if not asked:
            return set()
        found = {self._document(value) for value, _ in self._records_of(asked)}
        return found & set(asked)

    def _document_texts(self, ids: Iterable[str]) -> dict[str, str]:
        """The stored text of each of ``ids`` that has one (chunks joined by a blank line)."""
        asked = list(dict.fromkeys(ids))
        parts: dict[str, list[str]] = {}
        for value, text in self._records_of(asked) if asked else []:
            if text:
                parts.setdefault(self._document(value), []).append(text)
        return {i: "\n\n".join(parts[i]) for i in asked if i in parts}

    def close(self) -> None:
        return None


class FactoryRetriever(StoreRetriever):
    """A framework adapter (``llamaindex``, ``haystack``): the object the user's ``factory``
    names, built from the options; an ``embedding`` option, where the type has one, becomes the
    query embedder."""

    options_model: ClassVar[type[FactoryOptions]]
    wanted: ClassVar[tuple[str, ...]]  # the methods the factory's object offers

    options: FactoryOptions

    def __init__(
        self,
        identifier: str,
        target: Any,
        options: FactoryOptions,
        where: str,
        embedder: QueryEmbedder | None = None,
    ) -> None:
        super().__init__(identifier, options, where)
        self.options = options

    @classmethod
    def _build(
        cls, identifier: str, module: ModuleType, opts: Any, where: str, context: BuildContext
    ) -> Self:
        from retrieval_eval.retrievers.registry import instantiate

        target = instantiate(
            opts.factory, opts.kwargs, f"{where}.factory", cls.wanted, paths=opts.paths
        )
        has_embedding = getattr(opts, "embedding", None) is not None
        embedder = query_embedder(opts, context, where) if has_embedding else None
        return cls(identifier, target, opts, where, embedder)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, factory={self.options.factory!r})"


class VectorStoreRetriever(StoreRetriever):
    """Embeds each question, searches the store, returns distinct document ids best first."""

    kind: ClassVar[str]  # the store's name in messages: "Qdrant"
    options_model: ClassVar[type[StoreOptions]]

    def __init__(
        self,
        identifier: str,
        options: StoreOptions,
        handle: Any,
        embedder: QueryEmbedder,
        where: str,
    ) -> None:
        super().__init__(identifier, options, where, default_concurrency=4 if options.remote else 1)
        self.options = options
        self.embedder = embedder
        self._open(handle)
        self.check_dimension()
        self._check_id_field()

    @classmethod
    def _build(
        cls, identifier: str, module: ModuleType, opts: Any, where: str, context: BuildContext
    ) -> Self:
        handle = cls._connect(module, opts, where)
        try:
            return cls(identifier, opts, handle, query_embedder(opts, context, where), where)
        except BaseException:
            cls._disconnect(handle)
            raise

    # --- what each store implements -----------------------------------------------------------

    @classmethod
    def _connect(cls, module: ModuleType, options: Any, where: str) -> Any:
        """The store's client (or table), from the extra's ``module``; errors name the option."""
        raise NotImplementedError

    @staticmethod
    def _disconnect(handle: Any) -> None:
        """Release what :meth:`_connect` opened when the build fails after it."""
        return None

    def _open(self, handle: Any) -> None:
        """Keep the handle; find the collection (a ConfigError naming the ones there)."""
        raise NotImplementedError

    def _check_id_field(self) -> None:
        """A ConfigError when the records do not hold ``id_field``."""
        return None

    def _search(self, vector: list[float], k: int) -> list[Record]:
        """The ``k`` nearest records, best first; their texts need not be fetched (a ranking
        reads the ids alone)."""
        raise NotImplementedError

    def _dimension(self) -> int | None:
        raise NotImplementedError

    # --- shared ---------------------------------------------------------------------------------

    @classmethod
    def _folder(cls, path: Path, option: str, what: str = "folder") -> Path:
        """``path`` when it is a folder, else a ConfigError naming ``option``."""
        if not path.is_dir():
            raise ConfigError(f"{option}: no {cls.kind} {what} at {path}")
        return path

    @classmethod
    def _unreachable(cls, option: str, exc: Exception, verb: str = "reach") -> ConfigError:
        """The store could not be reached or opened: its error masked (keys in it are never
        shown) and cut."""
        from retrieval_eval.safety.redaction import redact

        hint = "; check the address and that the server is up" if verb == "reach" else ""
        return ConfigError(
            f"{option}: cannot {verb} {cls.kind} ({type(exc).__name__}: "
            f"{redact(str(exc))[:300]}){hint}"
        )

    @classmethod
    def _missing_collection(
        cls, where: str, name: str, names: Iterable[str], noun: str = "collection"
    ) -> ConfigError:
        return ConfigError(
            f"{where}.collection: no {noun} {name!r} in {cls.kind}; "
            f"{noun}s: {', '.join(sorted(names)) or 'none'}"
        )

    def _missing_field(
        self, option: str, holder: str, noun: str, field: str, present: Iterable[str]
    ) -> ConfigError:
        """``holder`` (``the points of 'docs' have``) has no ``noun`` (``payload field``)."""
        return ConfigError(
            f"{self.where}.{option}: {holder} no {noun} {field!r}; "
            f"{noun}s: {', '.join(present) or 'none'}"
        )

    def _check_payload_id_field(
        self, sample: Callable[[], list[Any]], records: str, noun: str
    ) -> None:
        """With ``id_field`` set: a ConfigError when the payload ``sample()`` returns (of one
        record, or none in an empty collection) lacks it; ``records`` (``points``) and ``noun``
        (``payload field``) are what the store calls them."""
        field = self.options.id_field
        if field is None:
            return
        payloads = sample()
        if payloads and payload_field(payloads[0], field) is None:
            raise self._missing_field(
                "id_field",
                f"the {records} of {self.options.collection!r} have",
                noun,
                field,
                sorted(payloads[0] or {}),
            )

    def _as_record(self, value: Any, text: Any) -> Record:
        """A stored id value as text (:func:`usable_id`), or a RetrieverError naming it; the
        text when it is one."""
        stored = usable_id(value)
        if stored is None:
            raise RetrieverError(
                f"{self.where}: a record's id is {type(value).__name__} {value!r}, not text"
            )
        return stored, text if isinstance(text, str) else None

    def check_dimension(self) -> None:
        """Called at build: a mismatch is a ConfigError before the first question."""
        self.embedder.check_dimension(
            self._dimension(), f"{self.kind} collection {self.options.collection!r}"
        )

    def retrieve(self, question: str, limit: int) -> list[str]:
        return self.retrieve_many([question], limit)[0]

    def retrieve_many(self, questions: Sequence[str], limit: int) -> list[list[str]]:
        if not questions:
            return []
        vectors = self.embedder.embed(questions)
        k = limit * self.fetch_multiplier
        return [
            self._ranking((value for value, _ in self._search(row.tolist(), k)), limit)
            for row in vectors
        ]

    @property
    def existing_ids_source(self) -> str:
        return f"{self.kind} collection {self.options.collection!r}"

    existing_ids = StoreRetriever._existing_ids
    document_texts = StoreRetriever._document_texts

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.identifier!r}, collection={self.options.collection!r})"

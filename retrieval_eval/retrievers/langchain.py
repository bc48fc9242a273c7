"""The ``langchain`` adapter: any LangChain retriever, or anything with ``invoke(question)``.

.. code-block:: yaml

    retrievers:
      rag_chain:
        type: langchain
        factory: my_app.search:build_retriever   # module:attribute, resolved from the cwd
        kwargs: {index: products}                 # passed to the factory when it is called
        id_key: source_id                         # Document.metadata key holding the doc id
        limit_argument: k                         # optional: invoke(question, k=limit)

Options:

- ``factory``: a ``module:attribute`` path to a retriever object, a class or a function
  returning one (called with ``kwargs``), or a vector store (``as_retriever()`` is used).
- ``id_key`` (default ``id``): the document id is ``metadata[id_key]``; when a document lacks that
  key, its ``Document.id``. A document with neither is an error for that question.
- ``limit_argument``: the keyword through which ``invoke`` takes the number of results (``k``
  for vector store retrievers). Without it the retriever returns what it is configured to and
  the list is cut to the limit: configure ``k`` to at least 12 for the default protocol.
- ``max_concurrency`` (default 1; raise it for retrievers that are safe to call from threads).

Needs ``langchain-core`` only for the documents it returns (install ``rag-retrieval-eval[langchain]``);
this module imports nothing from LangChain itself.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any, Self

from pydantic import BaseModel, ConfigDict, Field

from retrieval_eval.errors import ConfigError, UnknownNameError
from retrieval_eval.retrievers.options import BuildContext, OptionsAdapter


class LangchainOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    factory: str
    kwargs: dict[str, Any] = Field(default_factory=dict)
    id_key: str = Field(default="id", min_length=1)
    limit_argument: str | None = None
    max_concurrency: int = Field(default=1, ge=1)


class LangchainRetriever(OptionsAdapter):
    """Calls ``invoke(question)`` and reads each returned document's id."""

    options_model = LangchainOptions

    def __init__(
        self,
        identifier: str,
        runnable: Any,
        *,
        id_key: str = "id",
        limit_argument: str | None = None,
        max_concurrency: int = 1,
    ) -> None:
        self.identifier = identifier
        self.runnable = runnable
        self.id_key = id_key
        self.limit_argument = limit_argument
        self.max_concurrency = max_concurrency

    @classmethod
    def from_checked(
        cls, identifier: str, opts: LangchainOptions, where: str, context: BuildContext
    ) -> Self:
        from retrieval_eval.retrievers.registry import import_object

        where = f"{where}.factory"
        try:
            target = import_object(opts.factory)
        except UnknownNameError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        runnable = _instantiate(target, opts.kwargs, where)
        return cls(
            identifier,
            runnable,
            id_key=opts.id_key,
            limit_argument=opts.limit_argument,
            max_concurrency=opts.max_concurrency,
        )

    def retrieve(self, question: str, limit: int) -> list[str]:
        extra = {self.limit_argument: limit} if self.limit_argument else {}
        documents = self.runnable.invoke(question, **extra)
        if isinstance(documents, str | bytes) or not isinstance(documents, list | tuple):
            raise TypeError(
                f"invoke() returned {type(documents).__name__}, expected a list of Documents"
            )
        return [self.document_id(doc, index) for index, doc in enumerate(documents[:limit])]

    def document_id(self, document: Any, index: int) -> str:
        """``metadata[id_key]``, else ``document.id``; neither is an error naming the position."""
        metadata = getattr(document, "metadata", None)
        if isinstance(metadata, Mapping) and metadata.get(self.id_key) not in (None, ""):
            return str(metadata[self.id_key])
        doc_id = getattr(document, "id", None)
        if doc_id not in (None, ""):
            return str(doc_id)
        keys = ", ".join(sorted(map(str, metadata))) if isinstance(metadata, Mapping) else "none"
        raise ValueError(
            f"document at position {index} has no metadata[{self.id_key!r}] and no id "
            f"(metadata keys: {keys}); set id_key to the metadata key holding the document id"
        )

    def close(self) -> None:
        close = getattr(self.runnable, "close", None)
        if callable(close):
            close()


def _instantiate(target: Any, kwargs: Mapping[str, Any], where: str) -> Any:
    """A class or factory is called with ``kwargs``; an object is used as it is."""
    if inspect.isclass(target) or (callable(target) and not hasattr(target, "invoke")):
        try:
            obj = target(**kwargs)
        except TypeError as exc:
            raise ConfigError(f"{where}: calling the factory failed: {exc}") from None
    elif kwargs:
        raise ConfigError(f"{where}: 'kwargs' given, but the factory is an object, not callable")
    else:
        obj = target
    if not hasattr(obj, "invoke") and hasattr(obj, "as_retriever"):
        obj = obj.as_retriever()  # a vector store
    if not hasattr(obj, "invoke"):
        raise ConfigError(
            f"{where}: {type(obj).__name__} has no invoke(question); expected a LangChain "
            "retriever (or a vector store, or a factory returning one)"
        )
    return obj

"""The retriever contract: question text and a limit in, ranked document ids out.

A retriever is any object with an ``identifier`` and ``retrieve(question, limit)`` returning
document ids best first. Duplicates are allowed (one per chunk); the scorer collapses them.
Optional extras the scorer honours when present:

- ``retrieve_many(questions, limit)``: a native batch call, used instead of one call per question.
- ``max_concurrency``: how many questions may run at once (default 1: in-process retrievers are
  rarely thread-safe; remote services usually want more).
- ``close()``: called when the run is over.
- ``retrieve_for(question: GoldenQuestion, limit)``: called INSTEAD of ``retrieve`` (one question
  at a time) when present, for retrievers that need the question's id rather than its text, such
  as ``run_file`` looking up precomputed rankings. ``retrieve_many``, when present, still takes
  batches first.
- ``bounds_own_time = True``: the retriever's own timeouts end every call (the ``http`` adapter's
  per-attempt timeout and bounded retries). The scorer then calls it directly instead of on a
  watchdog thread, and a call that still took longer than the run's ``timeout_s`` is recorded as
  timed out once it returns.
- ``existing_ids(ids: Iterable[str]) -> set[str]``: which of ``ids`` (document ids, as the
  retriever returns them) exist in what it searches now. Called once per run with every expected
  id of the set, to find dead labels (:mod:`retrieval_eval.evaluation.labels`). ``existing_ids_source``
  (a string) says how it knows, e.g. ``"corpus"`` or ``"run file (best effort: ids seen in the
  file)"``. Without it labels are not checked. ``lexical``, ``dense``, ``run_file``,
  ``postgres_fts``, ``http`` (with a ``lookup`` template), ``chunked`` (through its inner
  retriever) and the vector-store adapters offer it. In-memory adapters also offer ``known_ids() -> set[str]`` (every id they
  can return), which ``chunked`` maps from chunk ids to document ids.
- ``document_texts(ids: Iterable[str]) -> dict[str, str]``: the stored text of each of ``ids``
  that the retriever can give (ids it does not know are left out; a document stored as chunks
  has them joined by a blank line), for lint and for reviewing candidates (``sets pool``).
  ``lexical``, ``dense``, ``run_file`` (given a ``corpus``), ``postgres_fts`` (with text
  columns), ``http`` (with a ``texts`` request), ``chunked`` (through its inner retriever) and
  the vector-store adapters (``qdrant``, ``chroma``, ``lancedb``, ``llamaindex``, ``haystack``)
  offer it.

An adapter *type* (a class registered for ``type:`` in the config) may also define the classmethod
``prepare(identifier, options, context)``: build whatever is expensive and cacheable (an index,
embeddings) into the adapter cache (:mod:`retrieval_eval.retrievers.cache`). The DAG calls it once
in ``load_golden_set``, so the mapped ``retrieve`` tasks load the cache instead of each building
it. ``lexical`` and ``dense`` define it.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable


@runtime_checkable
class EvaluatableRetriever(Protocol):
    """The one contract every retriever satisfies."""

    identifier: str

    def retrieve(self, question: str, limit: int) -> Sequence[str]:
        """Return up to ``limit`` document ids, best first."""
        ...


class FunctionRetriever:
    """Adapts a plain function ``f(question, limit) -> ids`` to the contract."""

    def __init__(
        self,
        function: Callable[[str, int], Sequence[str]],
        identifier: str | None = None,
        max_concurrency: int = 1,
    ) -> None:
        self.function = function
        self.identifier: str = identifier or str(getattr(function, "__name__", "function"))
        self.max_concurrency = max_concurrency

    def retrieve(self, question: str, limit: int) -> Sequence[str]:
        return self.function(question, limit)

    def __repr__(self) -> str:
        return f"FunctionRetriever({self.identifier!r})"


def checked_identifier(retriever: EvaluatableRetriever) -> EvaluatableRetriever:
    """``retriever``, unless its identifier is no Unicode text (a lone surrogate, e.g. from a
    command-line byte that is not UTF-8): refused before a run, which could not be saved."""
    from retrieval_eval.errors import RetrieverError
    from retrieval_eval.safety.limits import quote
    from retrieval_eval.safety.surrogates import lone_surrogate

    identifier = retriever.identifier
    char = lone_surrogate(identifier) if isinstance(identifier, str) else None
    if char is not None:
        raise RetrieverError(
            f"retriever identifier {quote(identifier)} holds {char}, which is not text (a byte "
            "of the name or module path that is not UTF-8, or the retriever's own identifier); "
            "a run under it could not be saved: give it a name that is text"
        )
    return retriever


def as_retriever(obj: object, identifier: str) -> EvaluatableRetriever:
    """Turn a class, factory, instance or plain function into a retriever.

    - an object with ``retrieve``: used as is (its ``identifier`` set when it has none);
    - a class or zero-argument factory: called, and the result checked again;
    - a function taking two arguments: wrapped as ``f(question, limit)``.
    """
    if hasattr(obj, "retrieve") and not inspect.isclass(obj):
        if not getattr(obj, "identifier", None):
            with contextlib.suppress(AttributeError):
                obj.identifier = identifier  # type: ignore[attr-defined]
        return obj  # type: ignore[return-value]
    if callable(obj):
        if inspect.isclass(obj) or _positional_arity(obj) == 0:
            return as_retriever(obj(), identifier)
        return FunctionRetriever(obj, identifier=identifier)  # type: ignore[arg-type,return-value]
    raise TypeError(
        f"{identifier}: {type(obj).__name__} is not a retriever: expected an object with "
        "retrieve(question, limit), a class or factory returning one, or a function "
        "f(question, limit)"
    )


def _positional_arity(function: Callable[..., object]) -> int:
    try:
        params = inspect.signature(function).parameters.values()
    except (TypeError, ValueError):
        return 2
    return sum(
        1
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    )

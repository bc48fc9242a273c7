"""Where retrievers come from, all in one place.

- Adapter types (``type:`` in the config): the built-ins below plus any an installed package
  registers under the ``retrieval_eval.adapters`` entry-point group. An adapter type is a class
  with ``from_options(identifier, options, context)``.
- Named retrievers: those declared under ``retrievers:`` in the config, plus those installed
  packages provide under the ``retrieval_eval.retrievers`` entry-point group (a class, factory,
  instance or ``f(question, limit)`` function).
- Import paths: any ``module:attribute`` resolved with the current directory on ``sys.path``,
  the way uvicorn resolves apps.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from retrieval_eval.errors import (
    ConfigError,
    RetrievalEvalError,
    RetrieverError,
    UnknownNameError,
)
from retrieval_eval.retrievers.base import EvaluatableRetriever, as_retriever, checked_identifier
from retrieval_eval.retrievers.isolation import stdout_to_stderr
from retrieval_eval.retrievers.options import BuildContext
from retrieval_eval.safety.limits import quote
from retrieval_eval.safety.suggest import did_you_mean

ADAPTER_ENTRY_POINT_GROUP = "retrieval_eval.adapters"
RETRIEVER_ENTRY_POINT_GROUP = "retrieval_eval.retrievers"

# The built-in adapter types, imported lazily so listing them costs nothing.
BUILTIN_ADAPTERS: dict[str, str] = {
    "lexical": "retrieval_eval.retrievers.lexical:LexicalRetriever",
    "run_file": "retrieval_eval.retrievers.run_file:RunFileRetriever",
    "http": "retrieval_eval.retrievers.http:HttpRetriever",
    "postgres_fts": "retrieval_eval.retrievers.postgres_fts:PostgresFtsRetriever",
    "chunked": "retrieval_eval.retrievers.chunked:ChunkedRetriever",
    "langchain": "retrieval_eval.retrievers.langchain:LangchainRetriever",
    "dense": "retrieval_eval.retrievers.dense:DenseRetriever",
    "python": "retrieval_eval.retrievers.python:PythonRetriever",
    "qdrant": "retrieval_eval.retrievers.qdrant:QdrantRetriever",
    "chroma": "retrieval_eval.retrievers.chroma:ChromaRetriever",
    "lancedb": "retrieval_eval.retrievers.lancedb:LanceDbRetriever",
    "llamaindex": "retrieval_eval.retrievers.llamaindex:LlamaIndexRetriever",
    "haystack": "retrieval_eval.retrievers.haystack:HaystackRetriever",
}


def adapter_types() -> dict[str, str]:
    """Every adapter type name mapped to its ``module:attribute`` path."""
    types = dict(BUILTIN_ADAPTERS)
    for ep in entry_points(group=ADAPTER_ENTRY_POINT_GROUP):
        types.setdefault(ep.name, ep.value)
    return types


def import_object(
    path: str, *, paths: Sequence[Path] = (), config_dir: Path | None = None, fixes: bool = False
) -> Any:
    """Import ``module:attribute`` (attribute may be dotted) with the cwd on ``sys.path``.

    ``paths`` (a ``python`` retriever's ``paths:``) go on ``sys.path`` first. With ``fixes``
    (user retriever code), a module that cannot be found is reported with the folders searched
    and the three ways to ship retriever code to the workers.
    """
    module_name, sep, attribute = path.partition(":")
    if not sep or not module_name or not attribute:
        raise UnknownNameError(f"{path!r} is not an import path; use 'module:attribute'")
    for folder in [Path.cwd(), *reversed(paths)]:
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))
    try:
        obj: Any = importlib.import_module(module_name)
    except ImportError as exc:
        missing = exc.name is not None and (module_name + ".").startswith(exc.name + ".")
        help_text = _import_help(paths, config_dir) if fixes and missing else ""
        raise UnknownNameError(
            f"cannot import module {module_name!r} for {path!r}: {exc}{help_text}"
        ) from None
    for part in attribute.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise UnknownNameError(
                f"module {module_name!r} has no attribute {attribute!r} (from {path!r})"
            ) from None
    return obj


def _import_help(paths: Sequence[Path], config_dir: Path | None) -> str:
    """Where a retriever module was looked for, and how retriever code reaches the workers."""
    searched = [f"{Path.cwd()} (the working directory)"]
    searched += [f"{folder} (paths:)" for folder in paths]
    dags = _airflow_dags_folder()
    if dags is not None:
        searched.append(f"{dags} (the Airflow DAGs folder)")
    searched.append("the installed packages")
    config_note = ""
    if config_dir is not None and config_dir not in (Path.cwd(), *paths):
        config_note = f" (the config's folder {config_dir} is searched only when listed there)"
    return (
        f"\n  searched: {'; '.join(searched)}"
        "\n  fixes: (1) install it as a package into the workers' environment (the image's "
        "`pip install`); (2) keep it beside the config: a retriever of `type: python` with "
        f"`factory: module:function` and `paths:` naming its folder{config_note}; (3) have an "
        f"installed package provide it under the {RETRIEVER_ENTRY_POINT_GROUP!r} entry-point "
        "group"
    )


def _airflow_dags_folder() -> str | None:
    """The DAGs folder when running inside Airflow (it is on ``sys.path`` there), else None.

    Read from the Airflow config already loaded, never by importing Airflow here.
    """
    if "airflow" not in sys.modules:
        return None
    conf = getattr(sys.modules.get("airflow.configuration"), "conf", None)
    try:
        folder = conf.get("core", "dags_folder") if conf is not None else None
    except Exception:  # an Airflow whose config cannot be read: the variable, if any
        folder = None
    return str(folder) if folder else os.environ.get("AIRFLOW__CORE__DAGS_FOLDER")


def instantiate(
    path: str,
    kwargs: Mapping[str, Any],
    where: str,
    wanted: tuple[str, ...],
    paths: Sequence[Path] = (),
) -> Any:
    """The object a ``factory`` option names (imported with the adapter's ``paths:``): used as
    is when it has one of the ``wanted`` methods, else called with ``kwargs``."""
    try:
        target = import_object(path, paths=paths)
    except UnknownNameError as exc:
        raise ConfigError(f"{where}: {exc}") from None
    if any(hasattr(target, m) for m in wanted) and not isinstance(target, type):
        return target
    if not callable(target):
        raise ConfigError(f"{where}: {path!r} has none of {', '.join(wanted)} and is not callable")
    try:
        built = target(**kwargs)
    except Exception as exc:
        raise RetrieverError(f"{where}: {path}(...) failed: {type(exc).__name__}: {exc}") from exc
    if not any(hasattr(built, m) for m in wanted):
        raise ConfigError(
            f"{where}: {path}(...) returned {type(built).__name__}, which has none of "
            f"{', '.join(wanted)}"
        )
    return built


def _adapter_type(type_name: str, identifier: str, context: BuildContext) -> Any:
    types = adapter_types()
    if type_name not in types:
        raise ConfigError(
            f"{context.where(identifier)}.type: unknown adapter type "
            f"{type_name!r}; available types: {', '.join(sorted(types))}"
        )
    return import_object(types[type_name])


def _adapter_call(type_name: str, identifier: str, call: Callable[[], Any]) -> Any:
    try:
        return call()
    except RetrievalEvalError:
        raise
    except Exception as exc:  # the adapter's own failure (unreachable index, bad file, ...)
        raise RetrieverError(
            f"cannot build retriever {identifier!r} (type {type_name!r}): {_failure(exc)}"
        ) from exc


def build_adapter(
    type_name: str, identifier: str, options: Mapping[str, Any], context: BuildContext
) -> EvaluatableRetriever:
    """Build a retriever of a registered adapter type from its options."""
    adapter = _adapter_type(type_name, identifier, context)
    retriever = _adapter_call(
        type_name, identifier, lambda: adapter.from_options(identifier, options, context)
    )
    return retriever  # type: ignore[no-any-return]


def prepare_adapter(
    type_name: str, identifier: str, options: Mapping[str, Any], context: BuildContext
) -> bool:
    """Run the adapter type's optional ``prepare(identifier, options, context)`` hook.

    An adapter whose build is expensive and cacheable (``lexical``'s index, ``dense``'s
    embeddings) defines it to fill its cache once, before a DAG fans the questions out over
    several processes. Returns False for a type without the hook (nothing to do).
    """
    adapter = _adapter_type(type_name, identifier, context)
    hook = getattr(adapter, "prepare", None)
    if not callable(hook):
        return False
    _adapter_call(type_name, identifier, lambda: hook(identifier, options, context))
    return True


def _failure(exc: Exception) -> str:
    # as_retriever's own TypeError already says what is wrong; other errors need their type
    return str(exc) if isinstance(exc, TypeError) else f"{type(exc).__name__}: {exc}"


class RetrieverRegistry:
    """Named retrievers from the config and from entry points, built on demand."""

    def __init__(
        self,
        specs: Mapping[str, Mapping[str, Any]] | None = None,
        base_dir: Path | None = None,
        source: str = "<config>",
        missing_config: str = "",
    ) -> None:
        self.specs = dict(specs or {})
        # where a config was looked for when none was found, for "unknown retriever"
        self.missing_config = missing_config
        self.context = BuildContext(
            base_dir=base_dir or Path.cwd(), source=source, build=self._build_inline
        )

    def _entry_points(self) -> dict[str, Any]:
        return {ep.name: ep for ep in entry_points(group=RETRIEVER_ENTRY_POINT_GROUP)}

    def names(self) -> list[str]:
        """Configured retrievers first, then those installed packages provide (but for a name
        with a colon: :meth:`build` reads it as a ``module:attribute`` import path)."""
        extra = sorted(n for n in self._entry_points() if n not in self.specs and ":" not in n)
        return list(self.specs) + extra

    def describe(self, name: str) -> str:
        if name in self.specs:
            return f"type {self.specs[name].get('type')!r} from {self.context.source}"
        return f"entry point {self._entry_points()[name].value}"

    def check(self, name: str) -> None:
        """Fail on a name nothing provides, without building anything.

        A ``module:attribute`` path is imported (a missing module or attribute fails here); any
        other name must be configured or provided by an installed package. A configured
        retriever's type must exist, and a ``python`` one's options are validated (nothing of
        the team's code is imported).
        """
        if name in self.specs:
            type_name, options = self._split(name, self.specs[name])
            if type_name not in adapter_types():
                _adapter_type(type_name, name, self.context)  # raises, naming the types
            if type_name == "python":
                from retrieval_eval.retrievers.python import check_options

                check_options(name, options, self.context)
        elif ":" in name:
            with stdout_to_stderr():  # the module's own code runs: its prints stay off stdout
                self._import(name)
        elif name not in self.names():
            self._build(name)  # raises UnknownNameError naming what is available

    def build(self, name: str) -> EvaluatableRetriever:
        """Build a retriever by configured name, entry-point name or ``module:attribute``."""
        return checked_identifier(self._build(name))

    def _build(self, name: str) -> EvaluatableRetriever:
        if name in self.specs:
            return self._build_inline(name, self.specs[name])
        if ":" in name:
            # an import path, as :meth:`check` reads it (entry-point names are plain:
            # the packaging spec recommends letters, digits, "_", "." and "-"), so no entry
            # point is looked up for it
            return self._wrap(name, lambda: self._import(name))
        eps = self._entry_points()
        if name in eps:
            return self._wrap(name, lambda: eps[name].load())
        names = self.names()
        where = f"; {self.missing_config}" if self.missing_config else ""
        raise UnknownNameError(
            f"unknown retriever {quote(name)}{did_you_mean(name, names)}; "
            f"configured: {', '.join(names) or 'none'}{where}; "
            f"adapter types available for the config's 'retrievers:' section: "
            f"{', '.join(sorted(adapter_types()))}; or give a 'module:attribute' import path"
        )

    def prepare(self, name: str) -> bool:
        """Fill a configured retriever's cache ahead of a fan-out (see :func:`prepare_adapter`).

        False for names that are not configured adapters (entry points, import paths) and for
        adapter types without the hook.
        """
        if name not in self.specs:
            return False
        type_name, options = self._split(name, self.specs[name])
        with stdout_to_stderr():
            return prepare_adapter(type_name, name, options, self.context)

    def _build_inline(self, identifier: str, spec: Mapping[str, Any]) -> EvaluatableRetriever:
        type_name, options = self._split(identifier, spec)
        return build_adapter(type_name, identifier, options, self.context)

    def _split(self, identifier: str, spec: Mapping[str, Any]) -> tuple[str, dict[str, Any]]:
        options = dict(spec)
        type_name = options.pop("type", None)
        if not isinstance(type_name, str):
            raise ConfigError(
                f"{self.context.where(identifier)}: missing 'type'; "
                f"available types: {', '.join(sorted(adapter_types()))}"
            )
        return type_name, options

    def _import(self, name: str) -> Any:
        return import_object(name, config_dir=self.context.base_dir, fixes=True)

    def _wrap(self, name: str, load: Any) -> EvaluatableRetriever:
        try:
            return as_retriever(load(), name)
        except RetrievalEvalError:
            raise
        except Exception as exc:  # user code: a module, factory or constructor that fails
            raise RetrieverError(f"cannot build retriever {name!r}: {_failure(exc)}") from exc

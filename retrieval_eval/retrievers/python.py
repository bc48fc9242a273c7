"""``type: python``: a team's own retriever code, shipped beside the config or as a package.

.. code-block:: yaml

    retrievers:
      my_chroma:
        type: python
        factory: my_vs:make_retriever      # module:attribute, called with the options
        options: {collection: handbook, top_n: 20}
        paths: [../retrievers]             # put on sys.path; relative to the config's folder
        prepare: my_vs:build_index         # optional: called once per run with the options

The factory may return a retriever object, a class or an ``f(question, limit)`` function
(:func:`~retrieval_eval.retrievers.base.as_retriever`); the config key is its identifier, so
runs, DAG ids, alerts and the dashboard all name it the same way. ``options`` are checked
against the factory's own signature before it is called; ``paths:`` must exist. Both are
checked by :func:`check_options` without importing anything, before a run starts.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from retrieval_eval.errors import ConfigError
from retrieval_eval.retrievers.base import EvaluatableRetriever, as_retriever
from retrieval_eval.retrievers.options import BuildContext, ImportPaths, parse_options


class PythonOptions(BaseModel):
    model_config = ConfigDict(extra="forbid")

    factory: str
    options: dict[str, Any] = Field(default_factory=dict)
    paths: ImportPaths = Field(default_factory=list)
    prepare: str | None = None

    @field_validator("factory", "prepare")
    @classmethod
    def _import_path(cls, value: str | None) -> str | None:
        if value is not None:
            module, sep, attribute = value.partition(":")
            if not (module and sep and attribute):
                raise ValueError(f"{value!r} is not an import path; use 'package.module:function'")
        return value


def check_options(identifier: str, options: Mapping[str, Any], context: BuildContext) -> None:
    """Validate the options (import paths' form, folders that exist) without importing."""
    parse_options(PythonOptions, identifier, options, context)


class PythonRetriever:
    """Builds the retriever a user's factory returns (this class is only the adapter type)."""

    @classmethod
    def from_options(
        cls, identifier: str, options: Mapping[str, Any], context: BuildContext
    ) -> EvaluatableRetriever:
        opts = parse_options(PythonOptions, identifier, options, context)
        factory = _load(opts.factory, opts, context)
        _bind(factory, opts, identifier, context, "factory")
        retriever = as_retriever(factory(**opts.options), identifier)
        # the config key names the retriever everywhere (a read-only identifier stands)
        with contextlib.suppress(AttributeError):
            retriever.identifier = identifier
        return retriever

    @classmethod
    def prepare(cls, identifier: str, options: Mapping[str, Any], context: BuildContext) -> None:
        """Call the ``prepare:`` function once per run (before the DAG's fan-out), if any."""
        opts = parse_options(PythonOptions, identifier, options, context)
        if opts.prepare is None:
            return
        prepare = _load(opts.prepare, opts, context)
        _bind(prepare, opts, identifier, context, "prepare")
        prepare(**opts.options)


def _load(path: str, opts: PythonOptions, context: BuildContext) -> Any:
    from retrieval_eval.retrievers.registry import import_object

    return import_object(path, paths=opts.paths, config_dir=context.base_dir, fixes=True)


def _bind(
    function: Any, opts: PythonOptions, identifier: str, context: BuildContext, role: str
) -> None:
    """Options that do not fit the function's signature: a ConfigError, before it is called."""
    target = getattr(opts, role)
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # a builtin without a signature: let the call decide
        return
    params = signature.parameters
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params.values())
    unexpected = [] if takes_any else [name for name in opts.options if name not in params]
    problems = [f"unexpected argument {name!r}" for name in unexpected]
    try:
        signature.bind(**{k: v for k, v in opts.options.items() if k not in unexpected})
    except TypeError as exc:
        problems.append(str(exc))
    if problems:
        raise ConfigError(
            f"{context.where(identifier)}.options: {'; '.join(problems)} "
            f"(the {role} {target}{signature} takes them as keyword arguments)"
        )

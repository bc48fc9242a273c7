"""The verbs the CLI and the DAG factory share: resolve a set and a retriever by name, run them."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from retrieval_eval.config.models import Config, RunOptions
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.evaluation.labels import attach_dead_labels
from retrieval_eval.evaluation.results import RunResult, RunSettings
from retrieval_eval.evaluation.scoring import evaluate
from retrieval_eval.golden.loaders import SET_SUFFIXES, load_golden_set
from retrieval_eval.golden.models import GoldenQuestionSet
from retrieval_eval.retrievers.base import EvaluatableRetriever
from retrieval_eval.safety.limits import quote


def resolve_set(config: Config, name: str, identifier: str | None = None) -> GoldenQuestionSet:
    """A registered set identifier, or a path to a set file (relative to the cwd).

    ``identifier`` names a file's set (JSONL and CSV files have none of their own); with a
    registered set it is an error, since it would silently go unused.
    """
    path = Path(name)
    if path.suffix.lower() in SET_SUFFIXES or path.is_file():
        return load_golden_set(path, identifier=identifier)
    if identifier is not None:
        raise InvalidInputError(
            f"--identifier names the set of a set file, but {quote(name)} is not a set file; "
            "give the file's path, or leave --identifier out"
        )
    return config.golden_sets.get(name)


def resolve_retriever(config: Config, name: str) -> EvaluatableRetriever:
    return config.retriever_registry.build(name)


@contextmanager
def opened_retriever(config: Config, name: str) -> Iterator[EvaluatableRetriever]:
    """Build the retriever; close it afterwards when it has ``close()`` (pools, connections).

    A ``close()`` that raises is logged as a warning, not raised: by then the run is evaluated
    (and, the block done, saved unless ``--no-save``), and a pool that fails to shut down must
    not lose it, nor hide the block's own error.
    """
    retriever = resolve_retriever(config, name)
    try:
        yield retriever
    finally:
        close = getattr(retriever, "close", None)
        if callable(close):
            try:
                close()
            except Exception as exc:
                from retrieval_eval.safety.redaction import redact
                from retrieval_eval.safety.surrogates import escaped

                said = str(exc).strip()
                text = f"{type(exc).__name__}: {said}" if said else type(exc).__name__
                logging.getLogger(__name__).warning(
                    "retriever %s: close() failed after the evaluation, whose results stand: %s",
                    quote(name),
                    escaped(redact(text))[:300],
                )


def resolve_settings(
    config: Config, set_identifier: str, retriever: str, **overrides: Any
) -> RunSettings:
    """Run settings: the config's ``run:``, then the evaluation's own, then explicit overrides."""
    options: RunOptions = config.section_for(set_identifier, retriever, "run")
    values = options.settings().model_dump()
    values.update({k: v for k, v in overrides.items() if v is not None})
    return RunSettings.model_validate(values)


def run_evaluation(
    config: Config,
    set_name: str,
    retriever_name: str,
    *,
    progress: bool = False,
    **overrides: Any,
) -> RunResult:
    """Load, build, evaluate; the retriever is closed afterwards when it can be."""
    golden_set = resolve_set(config, set_name)
    settings = resolve_settings(config, golden_set.identifier, retriever_name, **overrides)
    with opened_retriever(config, retriever_name) as retriever:
        result = evaluate(golden_set, retriever, settings, progress=progress)
        return attach_dead_labels(result, golden_set, retriever)

"""retrieval-eval: does your retrieval still find the right documents?

The public verbs and types are re-exported here (as ranx does) and imported lazily, so
``import retrieval_eval`` and the CLI's ``--help`` stay fast.
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable
from typing import Any


def lazy_exports(
    package: str, exports: dict[str, str], namespace: dict[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """A package's ``__getattr__`` and ``__dir__`` for ``exports`` (name -> module);
    ``namespace`` is the package's ``globals()``, where a name is kept once imported."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *exports})

    return __getattr__, __dir__


__version__ = "0.1.0"
# The distribution's name on a package index (``pip install``, importlib.metadata); the import
# name stays ``retrieval_eval`` and the command ``retrieval-eval``. The name ``retrieval-eval``
# is another project's on PyPI: every install hint is built from this (retrievers/extras.py).
DISTRIBUTION = "rag-retrieval-eval"


@functools.cache
def installed_version() -> str:
    """The installed distribution's version (what every stored run and replay records), or
    :data:`__version__` when the package runs from a source tree that was never installed."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return __version__


_EXPORTS = {
    "GoldenQuestion": "retrieval_eval.golden.models",
    "GoldenQuestionSet": "retrieval_eval.golden.models",
    "QuestionForm": "retrieval_eval.golden.models",
    "GoldenSetRegistry": "retrieval_eval.golden.registry",
    "load_golden_set": "retrieval_eval.golden.loaders",
    "dump_golden_set": "retrieval_eval.golden.loaders",
    "import_beir": "retrieval_eval.golden.importers",
    "import_trec": "retrieval_eval.golden.importers",
    "labels_fingerprint": "retrieval_eval.golden.fingerprint",
    "EvaluatableRetriever": "retrieval_eval.retrievers.base",
    "FunctionRetriever": "retrieval_eval.retrievers.base",
    "ChunkMapper": "retrieval_eval.retrievers.chunking",
    "RunFileRetriever": "retrieval_eval.retrievers.run_file",
    "RetrieverRegistry": "retrieval_eval.retrievers.registry",
    "evaluate": "retrieval_eval.evaluation.scoring",
    "score_questions": "retrieval_eval.evaluation.scoring",
    "collapse": "retrieval_eval.retrievers.ranking",
    "judge": "retrieval_eval.evaluation.scoring",
    "summarise": "retrieval_eval.evaluation.aggregate",
    "RunResult": "retrieval_eval.evaluation.results",
    "RunSettings": "retrieval_eval.evaluation.results",
    "QuestionResult": "retrieval_eval.evaluation.results",
    "Config": "retrieval_eval.config.models",
    "load_config": "retrieval_eval.config.models",
    "run_evaluation": "retrieval_eval.workflows.labelled_run",
    "RetrievalEvalError": "retrieval_eval.errors",
    "Store": "retrieval_eval.store",
    "StoredRun": "retrieval_eval.store",
    "open_store": "retrieval_eval.store",
    "resolve_store_url": "retrieval_eval.store",
    "Verdict": "retrieval_eval.verdicts.models",
    "detect_regression": "retrieval_eval.verdicts.regression",
    "mcnemar_exact": "retrieval_eval.verdicts.significance",
    "render_verdict": "retrieval_eval.reports.verdict",
    "Leaderboard": "retrieval_eval.workflows.leaderboard",
    "compare_runs": "retrieval_eval.workflows.leaderboard",
    "Recorded": "retrieval_eval.workflows.recording",
    "record_run": "retrieval_eval.workflows.recording",
    "replay_spool": "retrieval_eval.workflows.recording",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

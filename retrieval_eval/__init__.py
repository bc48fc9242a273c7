"""retrieval-eval: does your retrieval still find the right documents?

The public verbs and types are re-exported here (as ranx does) and imported lazily, so
``import retrieval_eval`` and the CLI's ``--help`` stay fast.
"""

from __future__ import annotations

from retrieval_eval.lazy import lazy_exports

__version__ = "0.1.0"

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
    "evaluate": "retrieval_eval.scoring",
    "score_questions": "retrieval_eval.scoring",
    "collapse": "retrieval_eval.scoring",
    "judge": "retrieval_eval.scoring",
    "summarise": "retrieval_eval.aggregate",
    "RunResult": "retrieval_eval.results",
    "RunSettings": "retrieval_eval.results",
    "QuestionResult": "retrieval_eval.results",
    "Config": "retrieval_eval.config",
    "load_config": "retrieval_eval.config",
    "run_evaluation": "retrieval_eval.runner",
    "RetrievalEvalError": "retrieval_eval.errors",
    "Store": "retrieval_eval.store",
    "StoredRun": "retrieval_eval.store",
    "open_store": "retrieval_eval.store",
    "resolve_store_url": "retrieval_eval.store",
    "Verdict": "retrieval_eval.regression",
    "detect_regression": "retrieval_eval.regression",
    "mcnemar_exact": "retrieval_eval.regression",
    "render_verdict": "retrieval_eval.regression",
    "Leaderboard": "retrieval_eval.leaderboard",
    "compare_runs": "retrieval_eval.leaderboard",
    "Recorded": "retrieval_eval.recording",
    "record_run": "retrieval_eval.recording",
    "replay_spool": "retrieval_eval.recording",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

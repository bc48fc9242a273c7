"""Golden question sets: models, file loaders, fingerprint and registry.

The names below are imported when first used (:func:`retrieval_eval.lazy_exports`): importing one module
of the package (``results`` needs ``golden.forms``) then loads no set models, loaders, YAML
parser nor registry, none of which ``show`` needs.
"""

from __future__ import annotations

from retrieval_eval import lazy_exports

_EXPORTS = {
    "GoldenQuestion": "retrieval_eval.golden.models",
    "GoldenQuestionSet": "retrieval_eval.golden.models",
    "QuestionForm": "retrieval_eval.golden.forms",
    "GoldenSetRegistry": "retrieval_eval.golden.registry",
    "dump_golden_set": "retrieval_eval.golden.loaders",
    "labels_fingerprint": "retrieval_eval.golden.fingerprint",
    "load_golden_set": "retrieval_eval.golden.loaders",
    "validate_set_data": "retrieval_eval.golden.loaders",
}

__all__ = sorted(_EXPORTS)
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())

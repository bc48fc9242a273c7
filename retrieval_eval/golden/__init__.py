"""Golden question sets: models, file loaders, fingerprint and registry."""

from retrieval_eval.golden.fingerprint import labels_fingerprint
from retrieval_eval.golden.loaders import dump_golden_set, load_golden_set, validate_set_data
from retrieval_eval.golden.models import GoldenQuestion, GoldenQuestionSet, QuestionForm
from retrieval_eval.golden.registry import GoldenSetRegistry

__all__ = [
    "GoldenQuestion",
    "GoldenQuestionSet",
    "GoldenSetRegistry",
    "QuestionForm",
    "dump_golden_set",
    "labels_fingerprint",
    "load_golden_set",
    "validate_set_data",
]

"""Relevance labels: judgments of (question, document) pairs, the one rule for what counts as
judged (:mod:`~retrieval_eval.labels.judged`), agreement between raters, pooling candidates for
people to grade and promoting graded pairs into a set. A domain package: no store, no wording."""

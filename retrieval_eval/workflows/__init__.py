"""Workflows: what the CLI runs in one process and Airflow maps over tasks, each written once.

A labelled run (:mod:`~retrieval_eval.workflows.labelled_run`, recorded by
:mod:`~retrieval_eval.workflows.recording`), a replay (:mod:`~retrieval_eval.workflows.replay`, over
the samples of :mod:`~retrieval_eval.replay.samples`), pooling candidates for labelling
(:mod:`~retrieval_eval.workflows.pool`), a model judge's grading
(:mod:`~retrieval_eval.workflows.judge`), promoting graded pairs into a set
(:mod:`~retrieval_eval.workflows.promote`) and re-judging stored runs after a promotion
(:mod:`~retrieval_eval.workflows.rejudge`). They read and write through the store and know nothing
of click or Airflow.
"""

"""Judging a run against history: the baseline rules, the regression verdict, the leaderboard of
several retrievers, recording a judged run in the store, and the run pipeline the CLI's ``run``
and the DAG's tasks share (:mod:`retrieval_eval.judging.pipeline`)."""

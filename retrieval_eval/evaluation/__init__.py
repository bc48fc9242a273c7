"""The evaluation protocol: ask, collapse to distinct documents, score, aggregate, and the figures
(metrics, intervals, dead labels) of one run. Knows nothing of stores, reports or Airflow."""

MAX_DEPTH = 100  # the deepest depth a run may score and gate on (config and results check it)

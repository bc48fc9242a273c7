"""The evaluation protocol: ask, collapse to distinct documents, judge, aggregate, and the figures
(metrics, intervals, dead labels) of one run. Knows nothing of stores, reports or Airflow."""

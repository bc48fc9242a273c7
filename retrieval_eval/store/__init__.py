"""The result store: the shared ``eval_result`` table on SQLite or PostgreSQL.

``resolve_store_url`` finds the URL (``--db``, ``$RETRIEVAL_EVAL_DB``, the config's ``store:``,
then ``sqlite:///$RETRIEVAL_EVAL_HOME/results.sqlite``); ``open_store`` opens it, creating the
schema in an empty database; :class:`Store` saves runs and answers the questions regression
detection and the CLI ask. The spool keeps runs the store could not take.
"""

from __future__ import annotations

from retrieval_eval.store.models import StoredRun
from retrieval_eval.store.store import Store, StoreSchemaError, open_store
from retrieval_eval.store.url import home_dir, mask_url, resolve_store_url, store_url_for

__all__ = [
    "Store",
    "StoreSchemaError",
    "StoredRun",
    "home_dir",
    "mask_url",
    "open_store",
    "resolve_store_url",
    "store_url_for",
]

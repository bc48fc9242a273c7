"""The result store: the shared ``eval_result`` table on SQLite or PostgreSQL.

``resolve_store_url`` finds the URL (``--db``, ``$RETRIEVAL_EVAL_DB``, the config's ``store:``,
then ``sqlite:///$RETRIEVAL_EVAL_HOME/results.sqlite``); ``open_store`` opens it, creating the
schema in an empty database, and ``open_store_to_read`` (read-only commands) creates nothing;
:class:`Store` holds the engine and gives ``store.transaction()``; its repositories
(``store.runs``, ``store.alerts``, ``store.replays``, ``store.questions``, ``store.judgments``,
``store.judges``) save and read each concept. The spool keeps runs the store could not take.

The names below are imported when first used, so ``--help`` and the commands that never open a
store do not import SQLAlchemy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from retrieval_eval.paths import home_dir
    from retrieval_eval.store.models import StoredRun
    from retrieval_eval.store.store import Store, StoreSchemaError, open_store, open_store_to_read
    from retrieval_eval.store.summary import RunSummary
    from retrieval_eval.store.url import mask_url, resolve_store_url, store_url_for

_EXPORTS = {
    "Store": "retrieval_eval.store.store",
    "StoreSchemaError": "retrieval_eval.store.store",
    "open_store": "retrieval_eval.store.store",
    "open_store_to_read": "retrieval_eval.store.store",
    "StoredRun": "retrieval_eval.store.models",
    "RunSummary": "retrieval_eval.store.summary",
    "home_dir": "retrieval_eval.paths",
    "mask_url": "retrieval_eval.store.url",
    "resolve_store_url": "retrieval_eval.store.url",
    "store_url_for": "retrieval_eval.store.url",
}

__all__ = [
    "RunSummary",
    "Store",
    "StoreSchemaError",
    "StoredRun",
    "home_dir",
    "mask_url",
    "open_store",
    "open_store_to_read",
    "resolve_store_url",
    "store_url_for",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:  # also how ``from retrieval_eval.store import <submodule>`` gets there
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

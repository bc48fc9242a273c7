"""The home folder every layer may use: the default store, the spool and the cache live in it.

A base module (like errors.py) so the store and the retrievers' cache read it without one
importing the other.
"""

from __future__ import annotations

import os
from pathlib import Path

HOME_ENV = "RETRIEVAL_EVAL_HOME"
DEFAULT_HOME = "~/.retrieval-eval"


def home_dir() -> Path:
    """``$RETRIEVAL_EVAL_HOME`` or ``~/.retrieval-eval``: default store and spool live here."""
    return Path(os.environ.get(HOME_ENV) or DEFAULT_HOME).expanduser()

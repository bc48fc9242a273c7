"""Helpers tests import by name (``from helpers import ...``).

Kept out of conftest.py on purpose: several folders have a conftest.py, and ``from conftest
import`` would find whichever was loaded last.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
SHARED_DATA = ROOT.parent / "shared" / "data"
PG_ENV = "RETRIEVAL_EVAL_TEST_PG"
DEFAULT_PG = "postgresql://postgres@127.0.0.1:5432/test"


def required(env: str) -> bool:
    """True when ``env`` asks for a skip to become a failure (CI sets these)."""
    return os.environ.get(env, "").lower() not in ("", "0", "false", "no")


def shared_collection(name: str) -> Path:
    """A BEIR collection from ../shared/data, or a clean skip where it is absent."""
    path = SHARED_DATA / name
    if not (path / "queries.jsonl").is_file():
        pytest.skip(f"shared collection {path} is absent")
    return path

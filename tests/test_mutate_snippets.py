"""``make mutate`` stays runnable: every mutation's snippet is still in its file, exactly once,
and its guarding tests exist (a refactor that moves a rule must move its mutation too; the
check itself takes minutes and is not part of the suite)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _mutations() -> list[Any]:
    spec = importlib.util.spec_from_file_location("mutate_tool", ROOT / "tools" / "mutate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("mutate_tool", module)
    spec.loader.exec_module(module)
    return list(module.MUTATIONS)


MUTATIONS = _mutations()


@pytest.mark.parametrize("mutation", MUTATIONS, ids=lambda m: m.name)
def test_the_snippet_is_in_its_file_once_and_its_tests_exist(mutation: Any) -> None:
    text = (ROOT / mutation.file).read_text(encoding="utf-8")
    assert text.count(mutation.original) == 1
    for test_file in mutation.tests:
        assert (ROOT / test_file).is_file(), test_file


def test_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))

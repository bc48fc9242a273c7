"""tests/scheduling.py names modules by path: a renamed module must not drop out silently."""

from __future__ import annotations

from helpers import ROOT
from scheduling import COSTLIEST, SHARED_SCOPES, scope_of


def test_every_named_module_exists() -> None:
    named = set(SHARED_SCOPES) | {s for s in COSTLIEST if s not in SHARED_SCOPES.values()}
    assert [path for path in sorted(named) if not (ROOT / path).is_file()] == []


def test_every_shared_scope_is_ranked_and_a_module_is_its_own_scope() -> None:
    assert set(SHARED_SCOPES.values()) <= set(COSTLIEST)
    assert scope_of("tests/agreement/test_by_design.py::test_x[a::b]") == "tests/agreement (ranx)"
    assert (
        scope_of("tests/evaluation/test_scoring.py::TestClass::test_y")
        == "tests/evaluation/test_scoring.py"
    )

"""tests/scheduling.py names modules by path: a renamed module must not drop out silently."""

from __future__ import annotations

from helpers import ROOT
from scheduling import COSTLIEST, scope_of


def test_every_named_module_exists() -> None:
    assert [path for path in COSTLIEST if not (ROOT / path).is_file()] == []


def test_a_module_is_its_own_scope() -> None:
    assert scope_of("tests/agreement/test_by_design.py::test_x[a::b]") == (
        "tests/agreement/test_by_design.py"
    )
    assert (
        scope_of("tests/evaluation/test_scoring.py::TestClass::test_y")
        == "tests/evaluation/test_scoring.py"
    )

"""ranx itself, once a run: the stored figures (``ranx_figures.json``) are what ranx computes now.

The other agreement tests compare this tool with those stored figures; ranx runs in this one
module, its functions uncompiled (``ranx_figures.py`` says why); ``-m "not ranx"`` leaves it out.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers import required, shared_collection

from .ranx_figures import FIGURES, WRITE_ENV, compute_uncompiled, stored, write

pytestmark = pytest.mark.ranx
TOLERANCE = 1e-9


@pytest.fixture(scope="module")
def live() -> dict[str, Any]:
    """ranx's figures now, for every reference case of the shared data there is."""
    figures = compute_uncompiled()
    if required(WRITE_ENV):
        if not figures["cases"]:
            pytest.fail(f"{WRITE_ENV} is set but there is no shared data: it would store no cases")
        write(figures)
    return figures


def _differences(ours: dict[str, float], theirs: dict[str, float]) -> list[Any]:
    if set(ours) != set(theirs):
        return [("metrics", sorted(ours), sorted(theirs))]
    return [
        (name, ours[name], theirs[name])
        for name in ours
        if not math.isclose(ours[name], theirs[name], rel_tol=0, abs_tol=TOLERANCE)
    ]


def test_stored_by_design_figures_are_ranx_own(live: dict[str, Any]) -> None:
    figures = stored()
    assert live["duplicate"]["read"] == figures["duplicate"]["read"]
    for example in ("duplicate", "no_result"):
        assert not _differences(live[example]["means"], figures[example]["means"]), example


def test_stored_case_figures_are_ranx_own(live: dict[str, Any]) -> None:
    figures = stored()["cases"]
    for collection in sorted({case.split("/")[0] for case in figures}):
        shared_collection(collection)  # a skip (a failure where data is required) naming it
    fix = f"rewrite {FIGURES.name} with {WRITE_ENV}=1 pytest -m ranx tests/agreement"
    assert sorted(live["cases"]) == sorted(figures), f"other reference cases now: {fix}"
    differences = {
        case: found
        for case, theirs in figures.items()
        if (found := _differences(live["cases"][case], theirs))
    }
    assert not differences, f"ranx computes other figures now ({fix}): {differences}"

"""did_you_mean: the closest known names, or nothing."""

from __future__ import annotations

from retrieval_eval.safety.suggest import did_you_mean


def test_close_names_are_suggested_best_first() -> None:
    known = ["handbook.demo", "handbook.full", "scifact"]
    assert did_you_mean("scifct", known) == " (did you mean 'scifact'?)"
    assert did_you_mean("handbook.dem", known).startswith(" (did you mean 'handbook.demo' or ")


def test_nothing_close_and_huge_names_get_no_guess() -> None:
    assert did_you_mean("zzz", ["handbook.demo"]) == ""
    assert did_you_mean("x" * 10_000, ["x" * 199]) == ""  # no quadratic work on a blob
    assert did_you_mean("a", []) == ""

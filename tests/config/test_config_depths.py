"""The gated depths: ``run.depths`` in the config (and ``--depths``), validated, and what the
retriever is asked for (the deepest depth times the overfetch multiplier)."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_eval.config.models import Config, Thresholds, load_config
from retrieval_eval.errors import ConfigError
from retrieval_eval.evaluation.results import RunSettings
from retrieval_eval.workflows.labelled_run import resolve_settings


def test_the_default_gates_top1_and_top3_and_asks_for_12() -> None:
    settings = Config().run.settings()
    assert (settings.depths, settings.depth, settings.fetch_limit) == ([1, 3], 3, 12)
    assert RunSettings().depths == [1, 3]  # a run stored before depths existed reads back so


@pytest.mark.parametrize(
    ("depths", "deepest", "fetch"), [([1, 5], 5, 20), ([1, 3, 5, 10], 10, 40), ([5], 5, 20)]
)
def test_the_fetch_follows_the_deepest_depth(depths: list[int], deepest: int, fetch: int) -> None:
    settings = Config.model_validate({"run": {"depths": depths}}).run.settings()
    assert (settings.depths, settings.depth, settings.fetch_limit) == (depths, deepest, fetch)


def test_a_deeper_cutoff_still_deepens_the_fetch() -> None:
    settings = Config.model_validate({"run": {"depths": [1, 5], "cutoffs": [1, 10]}}).run
    assert settings.settings().fetch_limit == 40


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("[]", "depths must name at least one depth, e.g. [1, 3] or [1, 5]"),
        ("[0, 3]", "depth 0 is not a whole number from 1 to 100"),
        ("[1, 101]", "depth 101 is not a whole number from 1 to 100"),
        ("[1, 5, 5]", "depth 5 is listed twice; list each depth once"),
        ("[5, 1]", "depths must be in increasing order: write [1, 5], not [5, 1]"),
        ("[1, five]", "run.depths.1: Input should be a valid integer"),
    ],
)
def test_bad_depths_are_named_with_the_file_and_the_fix(
    tmp_path: Path, value: str, said: str
) -> None:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(f"run: {{depths: {value}}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    message = str(info.value)
    assert message.startswith(f"{path}: run.depths") and said in message


def test_an_evaluation_gates_its_own_depths(tmp_path: Path) -> None:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(
        "run: {depths: [1, 3]}\n"
        "evaluations:\n"
        "  - {set: faq, retriever: bm25, run: {depths: [1, 5]}}\n"
        "  - {set: faq, retriever: dense, run: {depths: [1, 3, 7]}}\n"
    )
    config = load_config(path)
    assert resolve_settings(config, "faq", "bm25").depths == [1, 5]
    assert resolve_settings(config, "faq", "dense").fetch_limit == 28
    assert resolve_settings(config, "other", "bm25").depths == [1, 3]
    assert resolve_settings(config, "faq", "bm25", depths=[1, 10]).fetch_limit == 40


def test_each_gated_depth_has_a_max_drop_key(tmp_path: Path) -> None:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(
        "run: {depths: [1, 5, 10]}\nthresholds: {max_top1_drop: 0.2, max_top5_drop: 0.05}\n"
    )
    thresholds = load_config(path).thresholds
    assert [thresholds.max_drop(d) for d in (1, 3, 5, 10)] == [0.2, 0.10, 0.05, 0.10]
    again = Thresholds.model_validate(thresholds.model_dump())  # as overrides re-validate it
    assert again == thresholds


@pytest.mark.parametrize(
    ("text", "said"),
    [
        (
            "thresholds: {max_top5_drop: 0.05}\n",
            "thresholds.max_top5_drop: depth 5 is not gated (run.depths: [1, 3]); add 5 to the "
            "depths or remove the key",
        ),
        (
            "evaluations: [{set: s, retriever: r, thresholds: {max_top7_drop: 0.1}}]\n",
            "evaluations.0.thresholds.max_top7_drop: depth 7 is not gated (run.depths: [1, 3])",
        ),
        (
            "run: {depths: [1, 5]}\nthresholds: {max_top5_drop: 2}\n",
            "thresholds: max_top5_drop must be an absolute rate drop between 0 and 1",
        ),
    ],
)
def test_a_max_drop_that_would_never_apply_is_an_error(
    tmp_path: Path, text: str, said: str
) -> None:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value).startswith(f"{path}: ") and said in str(info.value)


def test_a_max_drop_override_for_an_ungated_depth_is_refused_before_the_retriever() -> None:
    from retrieval_eval.errors import InvalidInputError
    from retrieval_eval.workflows.labelled_run import resolve_run

    mini = Path(__file__).resolve().parents[1] / "golden" / "fixtures" / "mini.yaml"
    with pytest.raises(InvalidInputError, match=r"depth 5, which this run does not gate \(its "):
        resolve_run(
            Config(), str(mini), "never.imported:Retriever", thresholds={"max_top5_drop": 0.1}
        )
    plan = resolve_run(
        Config(), str(mini), "retrieval_eval.retrievers.base:FunctionRetriever",
        run={"depths": [1, 5]}, thresholds={"max_top5_drop": 0.1},
    )  # fmt: skip
    assert plan.thresholds.max_drop(5) == 0.1 and plan.settings.fetch_limit == 20

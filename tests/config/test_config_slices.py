"""Per-slice thresholds and a severity per check in the config (``thresholds.slices``,
``severity``), and lint's power settings reaching the verdict's slice rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from retrieval_eval.config.models import Config, PowerOptions, load_config
from retrieval_eval.errors import ConfigError
from retrieval_eval.workflows.labelled_run import resolve_thresholds

CONFIG = """\
run: {depths: [1, 5]}
lint: {alpha: 0.1, power: 0.9, churn: 0.02}
thresholds:
  max_top1_drop: 0.05
  slices:
    "form=match": {max_top1_drop: 0.25, max_top5_drop: 0.3}
    "hard_class=near-duplicate": {severity: warn}
evaluations:
  - set: handbook.demo
    retriever: bm25
    thresholds: {severity: warn, slices: {"form=gap": {max_top1_drop: 0.4, severity: error}}}
"""


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "retrieval_eval.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_slice_has_its_own_drops_and_severity_else_the_sections(tmp_path: Path) -> None:
    config = load_config(_write(tmp_path, CONFIG))
    limits = config.thresholds
    assert limits.max_drop(1) == 0.05
    assert limits.max_drop(1, "form=match") == 0.25
    assert limits.max_drop(5, "form=match") == 0.3
    assert limits.max_drop(3, "form=match") == 0.10  # not given: the depth's own, the default
    assert limits.max_drop(1, "form=gap") == 0.05  # no entry: the section's
    assert limits.severity_of() == "error"
    assert limits.severity_of("hard_class=near-duplicate") == "warn"
    assert limits.severity_of("form=match") == "error"
    own = config.section_for("handbook.demo", "bm25", "thresholds")
    assert (own.severity_of(), own.severity_of("form=gap")) == ("warn", "error")
    assert own.max_drop(1, "form=gap") == 0.4


def test_lint_power_settings_reach_every_thresholds_section(tmp_path: Path) -> None:
    """One power figure: the verdict's slice rule uses lint's alpha, power and churn, through
    overrides too (``run --max-top1-drop``)."""
    config = load_config(_write(tmp_path, CONFIG))
    expected = PowerOptions(alpha=0.1, power=0.9, churn=0.02)
    assert config.thresholds.power_options() == expected
    assert config.evaluations[0].thresholds is not None
    assert config.evaluations[0].thresholds.power_options() == expected
    overridden = resolve_thresholds(config, "handbook.demo", "bm25", max_top1_drop=0.2)
    assert overridden.power_options() == expected and overridden.max_drop(1) == 0.2
    assert Config().thresholds.power_options() == PowerOptions()  # the defaults


@pytest.mark.parametrize(
    ("section", "said"),
    [
        (
            'thresholds: {slices: {"forms=match": {}}}',
            "thresholds.slices: 'forms=match' is not a slice; name one as 'form=match' or "
            "'hard_class=near-duplicate'",
        ),
        (
            'thresholds: {slices: {"form=exact": {}}}',
            "thresholds.slices: 'form=exact': no such form; the forms are match, gap",
        ),
        (
            'thresholds: {slices: {"form=gap": {severity: fatal}}}',
            "thresholds.slices.form=gap.severity: Input should be 'error' or 'warn'",
        ),
        (
            "thresholds: {severity: info}",
            "thresholds.severity: Input should be 'error' or 'warn'",
        ),
        (
            'thresholds: {slices: {"form=gap": {max_top1_drop: 1.5}}}',
            "thresholds.slices.form=gap.max_top1_drop: Input should be less than or equal to 1",
        ),
        (
            'thresholds: {slices: {"form=gap": {max_top5_drop: 0.2}}}',
            "thresholds.slices.form=gap.max_top5_drop: depth 5 is not gated (run.depths: "
            "[1, 3]); add 5 to the depths or remove the key",
        ),
        (
            "thresholds: {power: {alpha: 0.2}}",
            "thresholds.power: the power settings are lint's; set lint.alpha, lint.power and "
            "lint.churn instead",
        ),
    ],
)
def test_bad_slice_thresholds_name_the_file_the_field_and_the_fix(
    tmp_path: Path, section: str, said: str
) -> None:
    path = _write(tmp_path, section + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: {said}"

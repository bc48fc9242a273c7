"""Options several commands share."""

from __future__ import annotations

import click

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default: $RETRIEVAL_EVAL_CONFIG, else ./retrieval_eval.yaml).",
)


report_format_option = click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Report format on stdout.",
)


def non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Reject negative thresholds instead of silently using a default."""
    if value is not None and value < 0:
        raise click.BadParameter(f"must be zero or more, got {value:g}")
    return value

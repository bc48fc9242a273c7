"""``retrieval-eval run SET RETRIEVER``: one evaluation, its report, and its exit code."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.options import config_option


def _cutoffs(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        cutoffs = sorted({int(part) for part in value.split(",") if part.strip()})
    except ValueError:
        raise click.BadParameter(
            f"expected comma-separated integers such as 1,3,10, got {value!r}"
        ) from None
    if not cutoffs or cutoffs[0] < 1:
        raise click.BadParameter("cutoffs must be positive integers")
    return cutoffs


@cli.command("run")
@click.argument("set_name", metavar="SET")
@click.argument("retriever_name", metavar="RETRIEVER")
@config_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["text", "json", "markdown"]),
    default="text",
    show_default=True,
    help="Report format on stdout.",
)
@click.option(
    "--output",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write the report to FILE instead of stdout.",
)
@click.option(
    "--k",
    "cutoffs",
    callback=_cutoffs,
    default=None,
    help="Cutoffs for secondary metrics, e.g. 1,3,5,10 (overfetch follows the deepest).",
)
@click.option(
    "--timeout",
    "timeout_s",
    # zero would time out every question: as in the config, the timeout must be positive
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    help="Per-question retrieval timeout in seconds (more than 0).",
)
@click.option(
    "--max-error-rate",
    type=click.FloatRange(0, 1),
    default=None,
    help="Share of questions that may error before the run is invalid (default 0).",
)
@click.option(
    "--max-concurrency",
    type=click.IntRange(1),
    default=None,
    help="Questions in flight at once (default: the retriever's own, else 1).",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress bar on stderr (default: when stderr is a terminal).",
)
def run(
    set_name: str,
    retriever_name: str,
    config_path: str | None,
    fmt: str,
    output: str | None,
    cutoffs: list[int] | None,
    timeout_s: float | None,
    max_error_rate: float | None,
    max_concurrency: int | None,
    progress: bool | None,
) -> None:
    """Evaluate RETRIEVER on SET.

    SET is a registered set identifier or a path to a set file. RETRIEVER is a configured
    retriever, one an installed package provides, or a 'module:attribute' import path.
    """
    from retrieval_eval.config import load_config
    from retrieval_eval.errors import InvalidRunError
    from retrieval_eval.report import render
    from retrieval_eval.runner import run_evaluation

    config = load_config(config_path)
    result = run_evaluation(
        config,
        set_name,
        retriever_name,
        progress=sys.stderr.isatty() if progress is None else progress,
        cutoffs=cutoffs,
        timeout_s=timeout_s,
        max_error_rate=max_error_rate,
        max_concurrency=max_concurrency,
    )
    text = render(result, fmt)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"report written to {output}", err=True)
    else:
        click.echo(text, nl=False)
    if not result.valid:
        raise InvalidRunError(
            f"run invalid: {result.error_count} of {result.question_count} questions errored "
            f"(error rate {result.error_rate:.1%} > max {result.settings.max_error_rate:.1%})"
        )

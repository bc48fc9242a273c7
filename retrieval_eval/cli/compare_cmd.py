"""``compare``: N retrievers on one set as a leaderboard (see :mod:`retrieval_eval.workflows.leaderboard`).

``compare SET R1 R2 [R3 ...]`` takes each retriever's latest stored run; ``compare --runs
ID,ID,...`` takes those runs (all of one set). The store is only read. Exit codes: 0 the board
was printed; 2 fewer than two retrievers or runs, a retriever without runs on the set, an
unknown run id, runs of different sets, an unknown ``--reference``, a bad ``--alpha``; 3 the
store cannot be reached. Warnings (different labels, questions missing from some runs) go to
stderr, so the formats on stdout stay machine-readable.
"""

from __future__ import annotations

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.history_cmd import _open_to_read
from retrieval_eval.cli.options import (
    FiniteFloatRange,
    config_option,
    format_option,
    output_option,
)
from retrieval_eval.labels.pooling import DEPTH as HOLES_DEPTH


def _run_ids(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"expected run ids separated by commas, got {value!r}") from None
    if any(i < 1 for i in ids):
        raise click.BadParameter(f"run ids are whole numbers from 1, got {value!r}")
    return ids


@cli.command("compare")
@click.argument("set_identifier", metavar="SET", required=False)
@click.argument("retrievers", metavar="R1 R2 [R3 ...]", nargs=-1)
@click.option(
    "--runs",
    "run_ids",
    callback=_run_ids,
    metavar="ID,ID,...",
    help="Compare these stored runs (all of one set) instead of the latest run of each retriever.",
)
@click.option(
    "--reference",
    metavar="R",
    help="Compare every other retriever with R (default: the best top-1, ties by top-3, name).",
)
@click.option(
    "--alpha",
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    default=0.05,
    show_default=True,
    help="Significance level of the Holm-corrected McNemar tests.",
)
@click.option(
    "--holes-depth",
    type=click.IntRange(1, 1000),
    default=HOLES_DEPTH,
    show_default=True,
    help="Count each run's holes (unjudged documents) in its top N, as `sets pool --depth`.",
)
@format_option("text", "json", "markdown", "csv")
@output_option("Write the leaderboard to FILE instead of stdout.")
@db_option
@config_option
def compare(
    set_identifier: str | None,
    retrievers: tuple[str, ...],
    run_ids: list[int] | None,
    reference: str | None,
    alpha: float,
    holes_depth: int,
    fmt: str,
    output: str | None,
    db: str | None,
    config_path: str | None,
) -> None:
    """A leaderboard of retrievers on SET: top-1 and top-3 with 95% intervals, MRR, nDCG,
    errors, latency, holes (the share of the top --holes-depth nobody judged), and each
    against the reference (McNemar exact on top-1, Holm-corrected;
    * marks a significant difference), then the questions where they disagree.

    Runs under different labels are compared anyway, with a warning.
    """
    if run_ids is None and set_identifier is None:
        raise click.UsageError("give SET and two or more retrievers, or --runs ID,ID,...")
    if run_ids is not None and (set_identifier is not None or retrievers):
        raise click.UsageError(
            "--runs takes the place of SET and the retrievers: give one or the other"
        )
    from retrieval_eval.cli.output_file import check_writable, emit
    from retrieval_eval.reports.leaderboard import render_leaderboard
    from retrieval_eval.workflows.leaderboard import compare_runs, latest_runs, runs_by_id

    if output not in (None, "-"):
        check_writable(output, "--output")

    with _open_to_read(db, config_path) as store:
        if run_ids is not None:
            runs = runs_by_id(store, run_ids)
        else:
            assert set_identifier is not None
            runs = latest_runs(store, set_identifier, retrievers)
        identifier = runs[0].result.set_identifier if runs else None
        every = store.judgments.read(identifier, gated=False) if identifier else []
        judged = store.judgments.read(identifier) if identifier else []
    board = compare_runs(
        runs,
        reference=reference,
        alpha=alpha,
        holes_depth=holes_depth,
        judgments=judged,
        model_judgments=every,
    )
    for warning in board.warnings:
        click.echo(f"warning: {warning}", err=True)
    emit(render_leaderboard(board, fmt), output, "the leaderboard")

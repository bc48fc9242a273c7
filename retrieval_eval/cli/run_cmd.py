"""``retrieval-eval run SET RETRIEVER``: one evaluation, its report, and its exit code."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.aliases import old_option
from retrieval_eval.cli.db_cmd import absent_store_file, db_option, plain_sqlite_file
from retrieval_eval.cli.options import (
    RUN_ID,
    FiniteFloatRange,
    check_summary,
    config_option,
    index_version_option,
    output_option,
    report_format_option,
    summary_option,
)

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.workflows.recording import RunRecord


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


def _depths(ctx: click.Context, param: click.Parameter, value: str | None) -> list[int] | None:
    """``--depths 1,5``: the gated depths, checked as the config's ``run.depths`` are."""
    if value is None:
        return None
    from retrieval_eval.evaluation.results import checked_depths

    try:
        return checked_depths([int(part) for part in value.split(",") if part.strip()])
    except ValueError as exc:
        if "invalid literal" in str(exc):
            exc = ValueError(f"expected comma-separated integers such as 1,5, got {value!r}")
        raise click.BadParameter(str(exc)) from None


def _max_drops(
    ctx: click.Context, param: click.Parameter, values: tuple[str, ...]
) -> dict[int, float]:
    """``--max-drop 5=0.05`` (repeatable): a gated depth's largest allowed drop, 0-1."""
    drops: dict[int, float] = {}
    for value in values:
        depth, sep, drop = value.partition("=")
        try:
            parsed = int(depth), float(drop)
        except ValueError:
            parsed = None
        if not sep or parsed is None:
            raise click.BadParameter(f"expected DEPTH=DROP such as 5=0.05, got {value!r}")
        if not 0 <= parsed[1] <= 1:
            raise click.BadParameter(
                f"{value!r}: a drop is between 0 and 1 (an absolute rate drop, 0.10 = ten points)"
            )
        drops[parsed[0]] = parsed[1]
    return drops


@cli.command("run")
@click.argument("set_name", metavar="SET")
@click.argument("retriever_name", metavar="RETRIEVER")
@config_option
@click.option(
    "--identifier",
    default=None,
    help="Set identifier when SET is a JSONL/CSV file (default: from the file name).",
)
@report_format_option
@summary_option
@output_option("Write the report to FILE instead of stdout.")
@click.option(
    "--cutoffs",
    "cutoffs",
    callback=_cutoffs,
    default=None,
    help="Cutoffs for secondary metrics, e.g. 1,3,5,10 (overfetch follows the deepest).",
)
@old_option("--k", "cutoffs")
@click.option(
    "--depths",
    callback=_depths,
    default=None,
    help="Gated depths, e.g. 1,5 (default: the config's run.depths, else 1,3); each has its "
    "own threshold, interval, slices, flips and McNemar.",
)
@click.option(
    "--relevance-level",
    type=click.IntRange(1, 3),
    default=None,
    help="Graded labels: the grade a document needs to count as a target in the hit rates, "
    "recall and MRR (default: the config's run.relevance_level, else 1; nDCG uses every grade).",
)
@click.option(
    "--timeout",
    "timeout_s",
    # zero would time out every question: as in the config, the timeout must be positive
    type=FiniteFloatRange(min=0, min_open=True),
    default=None,
    help="Per-question retrieval timeout in seconds (more than 0).",
)
@click.option(
    "--max-error-rate",
    type=FiniteFloatRange(0, 1),
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
@db_option
@index_version_option
@click.option("--no-save", is_flag=True, help="Compare with the baseline but do not save the run.")
@click.option(
    "--baseline",
    "baseline_run_id",
    type=RUN_ID,
    default=None,
    metavar="RUN_ID",
    help="Compare with this stored run instead of the automatic baseline.",
)
@click.option(
    "--max-top1-drop",
    type=FiniteFloatRange(0, 1),  # an absolute rate drop; negative is an error, not 0
    default=None,
    help="Largest allowed absolute top-1 drop, 0-1 (default: config, else 0.10).",
)
@click.option(
    "--max-top3-drop",
    type=FiniteFloatRange(0, 1),  # an absolute rate drop; negative is an error, not 0
    default=None,
    help="Largest allowed absolute top-3 drop, 0-1 (default: config, else 0.10).",
)
@click.option(
    "--max-drop",
    "max_drops",
    multiple=True,
    callback=_max_drops,
    metavar="DEPTH=DROP",
    help="Largest allowed absolute drop at a gated depth, e.g. 5=0.05 (repeatable; default: "
    "the config's max_topK_drop, else 0.10).",
)
@click.option(
    "--fail-on-regression",
    is_flag=True,
    help="Exit 1 when the verdict is a regression (default: exit 0 and report it).",
)
def run(
    set_name: str,
    retriever_name: str,
    config_path: str | None,
    identifier: str | None,
    fmt: str,
    summary: bool,
    output: str | None,
    cutoffs: list[int] | None,
    depths: list[int] | None,
    relevance_level: int | None,
    timeout_s: float | None,
    max_error_rate: float | None,
    max_concurrency: int | None,
    progress: bool | None,
    db: str | None,
    index_version: str | None,
    no_save: bool,
    baseline_run_id: int | None,
    max_top1_drop: float | None,
    max_top3_drop: float | None,
    max_drops: dict[int, float],
    fail_on_regression: bool,
) -> None:
    """Evaluate RETRIEVER on SET.

    SET is a registered set identifier or a path to a set file. RETRIEVER is a configured
    retriever, one an installed package provides, or a 'module:attribute' import path.

    The run is saved to the result store (--db, $RETRIEVAL_EVAL_DB, the config's 'store:', else
    ~/.retrieval-eval/results.sqlite) and judged against its baseline; the verdict follows the
    report. Exit codes: 0 ok, 1 regression with --fail-on-regression, 2 bad input, 3 invalid run
    or unreachable store (the run is then spooled; 'retrieval-eval db flush' saves it later),
    130 interrupted (Ctrl-C), 143 terminated (SIGTERM).

    When $GITHUB_STEP_SUMMARY names a file (a GitHub Actions step), the Markdown headline is
    appended to it, whatever --format says.
    """
    check_summary(fmt, summary)
    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import Interrupted, InvalidRunError
    from retrieval_eval.verdicts.regression import RegressionDetected
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.labelled_run import LabelledRun, LabelledRunJob

    if output:
        from retrieval_eval.cli.output_file import check_writable

        check_writable(output, "--output")  # before the run: a typo costs no evaluation
    # every input is checked before anything heavy is imported or built: the config, the set
    # (pydantic and YAML only), the settings, the store URL, then the retriever's name, so a bad
    # option fails before a retriever's module is imported or it builds an index
    config = load_config(config_path)
    # --no-save with no store file has nothing to compare with: SQLAlchemy is never loaded
    storeless = no_save and baseline_run_id is None and absent_store_file(db, config) is not None
    job = LabelledRunJob(
        config_path=config_path,
        set=set_name,
        retriever=retriever_name,
        identifier=identifier,
        run={
            "cutoffs": cutoffs,
            "depths": depths,
            "relevance_level": relevance_level,
            "timeout_s": timeout_s,
            "max_error_rate": max_error_rate,
            "max_concurrency": max_concurrency,
        },
        thresholds={
            "max_top1_drop": max_top1_drop,
            "max_top3_drop": max_top3_drop,
            **{f"max_top{depth}_drop": drop for depth, drop in max_drops.items()},
        },
        save=not no_save,
        baseline_run_id=baseline_run_id,
        index_version=index_version,
    )
    flow = LabelledRun(
        job,
        config=config,
        store_url=None if storeless else lambda: _store_url(db, config),
        check_store=None if storeless else lambda: _check_store(db, config),
        progress=sys.stderr.isatty() if progress is None else progress,
    )
    flow.resolve()
    store_url = None if storeless else _store_url(db, config)
    done = run_in_process(flow)
    result, verdict, failure = done.result, done.verdict, done.failure()
    kept = _kept(done, store_url, fmt)
    try:
        _write_report(done, fmt, summary, output, store_url, kept)
    except KeyboardInterrupt as exc:
        raise Interrupted.by(exc, f"while the report was written{kept}") from None
    if not result.valid:
        raise InvalidRunError(
            f"run invalid: {result.error_count} of {result.question_count} questions errored "
            f"(error rate {result.error_rate:.1%} > max {result.settings.max_error_rate:.1%})"
            + (f"; {failure}" if failure is not None else "")
        )
    if failure is not None:
        raise failure
    if verdict.is_regression and fail_on_regression:
        from retrieval_eval.reports.verdict import verdict_summary

        raise RegressionDetected(verdict_summary(verdict))


def _write_report(
    done: RunRecord, fmt: str, summary: bool, output: str | None, store_url: str | None, kept: str
) -> None:
    """Render the report and write it to ``output`` or stdout (and the headline to the GitHub
    step summary); a write that fails says ``kept``, with the exit code of the store's failure
    when the run was not saved."""
    from retrieval_eval.reports.report import render
    from retrieval_eval.reports.verdict import verdict_document
    from retrieval_eval.workflows.labelled_run import stored_judge_figures

    result, verdict, run_id, spool_path = done.result, done.verdict, done.run_id, done.spool_path
    extra: dict[str, object] = {
        "run_id": run_id,
        "saved": done.saved,
        "regression": verdict_document(verdict),
    }
    if spool_path is not None:
        extra["spool_path"] = str(spool_path)
    text = render(
        result,
        fmt,
        extra=extra,
        verdict=verdict,
        summary=summary,
        power=done.power,
        # a store that just failed is not asked again (an unreachable one would cost its timeout)
        judge_figures=stored_judge_figures(
            done.result, store_url if done.problem is None else None
        ),
    )
    if fmt in ("text", "markdown") and not summary and run_id is not None:
        gap = "\n" if fmt == "markdown" else ""  # Markdown: a paragraph after the last block
        text += f"{gap}Saved as run {run_id} in {_masked(store_url)}\n"
    step_summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if step_summary:
        _append_step_summary(
            step_summary, render(result, "markdown", extra, verdict=verdict, summary=True)
        )
    failure = done.failure()
    code = 2 if failure is None else failure.exit_code  # a store failure keeps its exit code
    if output:
        from retrieval_eval.cli.output_file import output_errors
        from retrieval_eval.reports.headline import headline_line
        from retrieval_eval.safety.files import write_file

        # the terminal still says how the run went; stdout stays empty (the report is the file)
        click.echo(headline_line(result, verdict, run_id), err=True)
        with output_errors(output, "--output", kept, code):
            write_file(output, text)
        click.echo(f"report written to {output}", err=True)
    else:
        from retrieval_eval.cli.output_file import stdout_errors

        with stdout_errors(kept, code):
            click.echo(text, nl=False)


def _kept(recorded: RunRecord, store_url: str | None, fmt: str) -> str:
    """What a report that could not be written leaves: the saved run, and how to see its report;
    or why the run was not saved, and where it went."""
    run_id = recorded.run_id
    if run_id is None:
        if recorded.problem is not None:
            return f"; the run was not saved: {recorded.problem}"
        return "; the run was not to be saved (--no-save)"
    return (
        f"; the run is saved as run {run_id} in {_masked(store_url)}: "
        f"`retrieval-eval runs show {run_id} --format {fmt} > FILE` writes its report again"
    )


def _append_step_summary(path: str, markdown: str) -> None:
    """Append the headline to the GitHub Actions job summary; a file that cannot be written is a
    warning, never a failed run."""
    try:
        with open(path, "a", encoding="utf-8") as summary_file:
            summary_file.write(markdown + "\n")
    except OSError as exc:
        click.echo(f"warning: could not append to $GITHUB_STEP_SUMMARY ({path}): {exc}", err=True)


def _check_store(db: str | None, config: Config) -> None:
    """Refuse a bad store URL before the retriever is imported; a plain ``sqlite:///path`` is
    valid as written, so checking it loads no SQLAlchemy (see :func:`plain_sqlite_file`)."""
    from retrieval_eval.safety.surrogates import lone_surrogate

    path = plain_sqlite_file(db, config)
    if path is None or lone_surrogate(str(path)) is not None:
        _store_url(db, config)


def _store_url(db: str | None, config: Config) -> str:
    from retrieval_eval.store import resolve_store_url

    return resolve_store_url(db, config)


def _masked(url: str | None) -> str:
    from retrieval_eval.store import mask_url

    return mask_url(url or "")

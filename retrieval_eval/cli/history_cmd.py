"""Reading and curating stored runs, the ``runs`` group: ``list``, ``show``, ``report``,
``prune``, ``accept`` (``export`` is in :mod:`~retrieval_eval.cli.import_cmd`, ``compare`` in
:mod:`~retrieval_eval.cli.compare_cmd`). Their old top-level spellings (``history``, ``show``,
``report --html``, ``prune``, ``baseline accept``) are hidden aliases
(:mod:`~retrieval_eval.cli.aliases`).

All take ``--db`` (and ``--config`` for the config's ``store:``). An unknown run id, or a
(set, retriever) pair with no stored runs, exits 2 naming what is stored instead; so does a
store that does not exist yet (no command here creates one, not even ``prune`` and
``accept``, which write to an existing store; the first ``run`` does).
"""

from __future__ import annotations

import io
import sys
from typing import TYPE_CHECKING, Any

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.aliases import old_command, old_option
from retrieval_eval.cli.db_cmd import db_option, store_url_for
from retrieval_eval.cli.options import (
    RUN_ID,
    check_summary,
    config_option,
    format_option,
    limit_option,
    output_option,
    report_format_option,
    summary_option,
)

if TYPE_CHECKING:
    from rich.table import Table

    from retrieval_eval.config.models import Config
    from retrieval_eval.labels.machine import JudgeFigures
    from retrieval_eval.lint.models import PowerReport
    from retrieval_eval.store import RunSummary, Store, StoredRun


def _open_existing(db: str | None, config_path: str | None) -> Store:
    """The store for a command that changes stored runs (runs prune, runs accept): it must
    exist already, as for the reading commands (a missing SQLite file or a database without the
    tables is NoStoreError, exit 2, and nothing is created), but it can be written."""
    from retrieval_eval.store.store import open_existing_store

    return open_existing_store(store_url_for(db, config_path))


def _open_to_read(db: str | None, config_path: str | None) -> Store:
    """The store for a command that only reads runs (runs list, show, report; compare), opened
    without creating anything: a missing SQLite file or a database without the tables is
    NoStoreError (exit 2, naming it and how to create one), another revision StoreSchemaError.
    """
    config = None
    if not db:
        from retrieval_eval.config.models import load_config

        config = load_config(config_path)
    return open_to_read(db, config)


def open_to_read(db: str | None, config: Config | None) -> Store:
    """:func:`_open_to_read` with the config loaded (``sets lint`` opens the store this way)."""
    from retrieval_eval.store import resolve_store_url
    from retrieval_eval.store.store import open_store_to_read

    return open_store_to_read(resolve_store_url(db, config))


def _table_text(*tables: Table) -> str:
    from rich.console import Console

    buffer = io.StringIO()
    console = Console(file=buffer, width=None if sys.stdout.isatty() else 140, highlight=False)
    for table in tables:
        console.print(table, markup=False)
    return "\n".join(line.rstrip() for line in buffer.getvalue().splitlines()) + "\n"


def _echo_json(data: Any) -> None:
    from retrieval_eval.formats.jsonio import dumps

    click.echo(dumps(data))


def _listed(run: RunSummary) -> dict[str, Any]:
    """One run as ``runs list --format json`` lists it (the text table reads the same keys):
    its gated ``depths``, and ``top{k}_hit_rate`` and ``_ci`` for each beyond top-1 and top-3."""
    from retrieval_eval.evaluation.results import as_pair, extra_depths

    deeper = extra_depths(run.depths)
    return {
        "id": run.run_id,
        "run_date": run.run_date.isoformat(),
        "set": run.set,
        "retriever": run.retriever,
        "question_count": run.question_count,
        "top1_hit_rate": run.top1_hit_rate,
        "top3_hit_rate": run.top3_hit_rate,
        "top1_hit_rate_ci": as_pair(run.top1_hit_rate_ci),
        "top3_hit_rate_ci": as_pair(run.top3_hit_rate_ci),
        "depths": list(run.depths),
        **{f"top{d}_hit_rate": run.hit_rate(d) for d in deeper},
        **{f"top{d}_hit_rate_ci": as_pair(run.hit_rate_ci(d)) for d in deeper},
        "error_count": run.error_count,
        "status": run.status,
        "verdict_state": run.verdict_state,
        "is_regression": run.is_regression,
        "accepted_baseline": run.accepted_baseline,
        "baseline_run_id": run.baseline_run_id,
        "labels_fingerprint": run.labels_fingerprint,
        # the index build it measured, its baseline's (as judged), the retrieval-eval that scored it
        "index_version": run.index_version,
        "baseline_index_version": run.baseline_index_version,
        "package_version": run.package_version,
        # expected ids the run found gone from the index (0: none, or not checked)
        "dead_label_count": run.dead_label_count,
        # the set version of its labels, and for a re-judged run the run it re-judges
        "set_version": run.set_version,
        "rejudged_from": run.rejudged_from,
    }


def _latest(store: Store, set_identifier: str, retriever: str) -> StoredRun:
    from retrieval_eval.workflows.leaderboard import latest_run

    return latest_run(store, set_identifier, retriever)


@cli.group("runs")
def runs() -> None:
    """Stored runs: list, show, report, export, prune, and accept one as the baseline."""


@runs.command("list")
@click.argument("set_identifier", metavar="SET")
@click.argument("retriever", metavar="RETRIEVER")
@limit_option("How many runs to list, newest first.")
@format_option("text", "json")
@click.option(
    "--as-stored",
    is_flag=True,
    help="Every stored run as judged when stored, not runs re-judged against the newest labels "
    "in place of their originals.",
)
@db_option
@config_option
def history(
    set_identifier: str,
    retriever: str,
    limit: int,
    fmt: str,
    as_stored: bool,
    db: str | None,
    config_path: str | None,
) -> None:
    """Recent runs of RETRIEVER on SET, newest first, with rates and verdicts; a run re-judged
    against the newest labels (sets rejudge) is listed in place of its original."""
    from retrieval_eval.store.summary import label_changes, like_with_like

    with _open_to_read(db, config_path) as store:
        summaries = store.runs.summaries(set_identifier, retriever, limit)
        if not as_stored:
            summaries = like_with_like(summaries)
        listed = [_listed(run) for run in summaries]
        if not listed:
            _latest(store, set_identifier, retriever)  # raises, naming what is stored
    if fmt == "json":
        _echo_json(listed)
        return
    from datetime import datetime

    from rich.table import Table

    from retrieval_eval.formats.numbers import MISSING, ci, pct
    from retrieval_eval.reports.verdict import index_versus

    table = Table(title=f"{set_identifier} × {retriever}", title_justify="left")
    depths = sorted({d for run in listed for d in run["depths"]})  # every depth a listed run gates
    rates = [f"top-{d}" for d in depths]
    indexed = any(run["index_version"] for run in listed)  # the column only where one was named
    columns = ("run", "date (UTC)", "questions", *rates, "errors", "verdict", "vs")
    for name in (*columns, "index") if indexed else columns:
        table.add_column(
            name,
            justify="right" if name in ("run", "questions", "errors") else "left",
            no_wrap=name == "index",  # "index A vs B" reads as one phrase or not at all
        )
    for run in listed:
        compared = run["baseline_run_id"] is not None and run["status"] == "valid"
        index = (
            index_versus(run["index_version"], run["baseline_index_version"] if compared else None)
            or run["index_version"]
            or "-"
        )
        verdict: str = run["verdict_state"] or "-"
        if run["status"] != "valid":
            verdict = f"{verdict} (invalid)"
        if run["accepted_baseline"]:
            verdict += " (accepted)"
        if run["dead_label_count"]:  # its rates count questions no retriever can answer
            verdict += f" (labels: {run['dead_label_count']} dead ids)"
        if run["rejudged_from"] is not None:
            verdict += f" (re-judged from run {run['rejudged_from']})"
        table.add_row(
            str(run["id"]),
            datetime.fromisoformat(run["run_date"]).strftime("%Y-%m-%d %H:%M"),
            str(run["question_count"]),
            *(
                f"{pct(run.get(f'top{d}_hit_rate'))} {ci(run.get(f'top{d}_hit_rate_ci'))}"
                if f"top{d}_hit_rate" in run
                else MISSING  # a depth beyond top-3 this run did not gate
                for d in depths
            ),
            str(run["error_count"]),
            verdict,
            # an invalid run was never compared (runs stored before may still carry an id)
            str(run["baseline_run_id"]) if compared else "",
            *([index] if indexed else []),
        )
    click.echo(_table_text(table), nl=False)
    for i in label_changes(summaries[::-1]):  # oldest first: i is the first run of new labels
        older, newer = summaries[::-1][i - 1], summaries[::-1][i]
        version = f" (set version {newer.set_version})" if newer.set_version else ""
        click.echo(
            f"labels changed between run {older.rejudged_from or older.run_id} and run "
            f"{newer.rejudged_from or newer.run_id}{version}"
            + (
                ": runs before it are shown re-judged against the newest labels"
                if any(run.rejudged_from for run in summaries)
                else ": `retrieval-eval sets rejudge SET` compares the runs before it like with like"
            )
        )
    dead = [str(run["id"]) for run in listed if run["dead_label_count"]]
    if dead:
        click.echo(
            f"labels need attention: run{'s' if len(dead) != 1 else ''} {', '.join(dead)} "
            "found expected ids no longer in the index; their stale questions are left out of "
            "the comparison (retrieval-eval runs show RUN_ID lists them)."
        )


def stored_power(run: StoredRun, config_path: str | None) -> tuple[PowerReport, str]:
    """The smallest drop the stored run's set size detects (:func:`~retrieval_eval.lint.power.
    run_power`, from its question count and rates), next to the thresholds of the config found
    for its set and retriever, else the defaults; and which of the two it used."""
    from retrieval_eval.config import lookup as defaults
    from retrieval_eval.lint.power import run_power

    result = run.result
    if defaults.find_config(config_path) is not None:
        from retrieval_eval.config.models import load_config

        config = load_config(config_path)
        spec = config.evaluation(result.set_identifier, result.retriever)
        own = spec is not None and spec.thresholds is not None
        thresholds = config.section_for(result.set_identifier, result.retriever, "thresholds")
        where = f"{config.source} (this set and retriever's evaluation)" if own else config.source
        return run_power(result, thresholds, config.lint), where
    from types import SimpleNamespace

    settings: Any = SimpleNamespace(
        max_top1_drop=defaults.MAX_TOP1_DROP,
        max_top3_drop=defaults.MAX_TOP3_DROP,
        alpha=defaults.POWER_ALPHA,
        power=defaults.POWER,
        churn=defaults.POWER_CHURN,
    )
    return run_power(result, settings, settings), "defaults (no config file found)"


old_command(cli, "history", history, "runs list")


@runs.command("show")
@click.argument("run_id", type=RUN_ID, metavar="RUN_ID")
@report_format_option
@summary_option
@click.option(
    "--per-query",
    is_flag=True,
    help="Per-question metrics as trec_eval -q prints them (metric, question id, value; then "
    "'all' with the means), instead of the report.",
)
@output_option("Write the report to FILE instead of stdout.")
@db_option
@config_option
def show(
    run_id: int,
    fmt: str,
    summary: bool,
    per_query: bool,
    output: str | None,
    db: str | None,
    config_path: str | None,
) -> None:
    """A stored run in full: its report, its verdict and its bookkeeping."""
    from retrieval_eval.cli.output_file import check_writable, emit

    check_summary(fmt, summary)
    if output not in (None, "-"):
        check_writable(output, "--output")
    if per_query and (summary or fmt != "text"):
        raise click.UsageError("--per-query prints trec_eval lines: no --summary or --format")
    from retrieval_eval.reports.report import render

    with _open_to_read(db, config_path) as store:
        run = store.runs.get(run_id)
        figures = None
        if not summary and fmt in ("text", "json", "markdown"):
            figures = _judge_figures(store, run)
    if per_query:
        from retrieval_eval.reports.csv import render_per_query

        emit(render_per_query(run.result), output)
        return
    extra: dict[str, Any] = {
        "run_id": run.id,
        "status": run.status,
        "accepted_baseline": run.accepted_baseline,
        "baseline_run_id": run.baseline_run_id,
        "created_at": run.created_at.isoformat(),
    }
    if fmt == "json":  # only JSON prints it, and dumping a verdict builds its pydantic schema
        from retrieval_eval.reports.verdict import verdict_document

        extra["regression"] = verdict_document(run.verdict) if run.verdict else None
    power, source = (None, None) if summary or fmt == "csv" else stored_power(run, config_path)
    text = render(
        run.result,
        fmt,
        extra=extra,
        verdict=run.verdict,
        summary=summary,
        power=power,
        power_source=source,
        judge_figures=figures,
    )
    if fmt in ("text", "markdown") and not summary:
        head = f"Run {run.id} ({run.status}), saved {run.created_at:%Y-%m-%d %H:%M} UTC"
        if run.accepted_baseline:
            head += ", accepted as baseline"
        # Markdown starts with its headline: the bookkeeping closes it
        text = f"{text}\n{head}\n" if fmt == "markdown" else f"{head}\n{text}"
    emit(text, output)


old_command(cli, "show", show, "runs show")


@runs.command("report")
@click.argument("run_id", type=RUN_ID, metavar="RUN_ID")
@output_option("Write the report to FILE (default, or '-': stdout).")
@old_option("--html", "output")
@db_option
@config_option
def report(run_id: int, output: str | None, db: str | None, config_path: str | None) -> None:
    """A stored run as ONE self-contained HTML file: the verdict, top-1/top-3 with 95%
    intervals and deltas, a chart of the rates by form and hard class, and every table.

    The file loads nothing from anywhere (inline CSS and SVG, no script): attach it to a
    ticket, mail it, open it offline.
    """
    from retrieval_eval.cli.output_file import check_writable, emit
    from retrieval_eval.reports.html import render_html

    if output not in (None, "-"):
        check_writable(output, "--output")
    with _open_to_read(db, config_path) as store:
        run = store.runs.get(run_id)
        figures = _judge_figures(store, run)
    page = render_html(run, *stored_power(run, config_path), judge_figures=figures)
    emit(page, output, f"report for run {run_id}")


def _judge_figures(store: Store, run: StoredRun) -> JudgeFigures | None:
    """The stored run's figures beside the model judgments the store holds of its set now
    (None without any): ``runs show`` and ``runs report`` give the same."""
    from retrieval_eval.labels.machine import judge_figures

    rows = store.judgments.read(run.result.set_identifier, gated=False)
    return judge_figures(run.result, rows)


old_command(cli, "report", report, "runs report")


@runs.command("prune")
@click.option(
    "--older-than",
    "older_than",
    type=int,
    required=True,
    metavar="DAYS",
    help="Delete runs that started more than DAYS days ago.",
)
@db_option
@config_option
def prune(older_than: int, db: str | None, config_path: str | None) -> None:
    """Delete old runs (retention). The current baseline of every key is always kept."""
    from retrieval_eval.errors import InvalidInputError

    if older_than < 0:
        raise InvalidInputError(f"--older-than must be zero or more days, got {older_than}")
    with _open_existing(db, config_path) as store:
        pruned = store.runs.prune(older_than)
        replays = f" and {pruned.replays} replay(s)" if pruned.replays else ""
        click.echo(
            f"pruned {pruned.runs} run(s){replays} older than {older_than} day(s) from "
            f"{store.display_url} (current baselines and each series' newest replay kept)"
        )


old_command(cli, "prune", prune, "runs prune")


@runs.command("accept")
@click.argument("run_id", type=RUN_ID, metavar="RUN_ID")
@db_option
@config_option
def accept(run_id: int, db: str | None, config_path: str | None) -> None:
    """Accept RUN_ID (a regression, say) as the baseline for its set and retriever.

    A run compares with the newest valid run of its key that is not a regression or was
    accepted: accepting an older run while a newer good one exists changes nothing for the next
    run, and the message says so, with the ``--baseline`` that compares with it anyway."""
    from retrieval_eval.workflows.baselines import accept_baseline

    with _open_existing(db, config_path) as store:
        click.echo(accept_baseline(store, run_id))


@cli.group("baseline", hidden=True)
def baseline() -> None:
    """Baselines: which run later runs are compared with (``runs accept`` now)."""


old_command(baseline, "accept", accept, "runs accept")

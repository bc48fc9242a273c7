"""``retrieval-eval sets promote`` and ``sets rejudge``: the next version of a set from
judgments, and past runs scored again against its labels.

``promote`` exits 2 on bad input (an unreadable judgments file, named by line) and when lint
finds errors in the new version (printed; nothing written) unless ``--force``. ``rejudge`` reads
and writes an existing store only (a missing one is exit 2, nothing created); an unknown set or
run id is exit 2.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import click

from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option
from retrieval_eval.cli.sets_cmd import sets


def _run_ids(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: give run ids separated by commas, e.g. 3,4,7") from None
    if not ids:
        raise click.BadParameter("give at least one run id, e.g. --runs 3,4,7")
    return ids


@sets.command("rejudge")
@click.argument("set_name", metavar="SET")
@click.option("--runs", "runs", default=None, metavar="ID,...", help="Only these stored runs.")
@click.option(
    "--since",
    type=click.DateTime(formats=["%Y-%m-%d", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"]),
    default=None,
    metavar="DATE",
    help="Only runs started on or after DATE (UTC).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@config_option
@db_option
def rejudge(
    set_name: str,
    runs: str | None,
    since: datetime | None,
    fmt: str,
    config_path: str | None,
    db: str | None,
) -> None:
    """Score past stored runs of SET again against its current labels, from their stored
    rankings (no retriever is called), and store each as a re-judged run."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.judging.pipeline import resolve_set, resolve_settings, resolve_thresholds
    from retrieval_eval.judging.rejudge import rejudge_runs
    from retrieval_eval.store import resolve_store_url
    from retrieval_eval.store.store import open_existing_store

    if runs is not None and since is not None:
        raise click.UsageError("give --runs or --since, not both")
    ids = _run_ids(runs)
    config = load_config(config_path)
    golden = resolve_set(config, set_name)
    when = since.replace(tzinfo=UTC) if since is not None else None
    with open_existing_store(resolve_store_url(db, config)) as store:
        stored = store.runs_of_set(golden.identifier, ids=ids, since=when)
        done = rejudge_runs(
            store,
            golden,
            stored,
            lambda r: resolve_thresholds(config, golden.identifier, r),
            lambda r: resolve_settings(config, golden.identifier, r).depths,
        )
    if fmt == "json":
        from retrieval_eval.reports.jsonio import dumps

        click.echo(
            dumps(
                {
                    "set": golden.identifier,
                    "set_version": golden.version,
                    "labels_fingerprint": golden.fingerprint,
                    "runs": [_listed(item) for item in done],
                }
            )
        )
        return
    labels = f"version {golden.version}, " if golden.version is not None else ""
    click.echo(
        f"{golden.identifier}: {len(done)} stored run(s) against its labels "
        f"({labels}fingerprint {golden.fingerprint[:12]})"
    )
    for item in done:
        click.echo(f"  {_line(item)}")


def _listed(item: Any) -> dict[str, Any]:
    verdict = item.verdict
    return {
        "run_id": item.run_id,
        "retriever": item.retriever,
        "outcome": item.outcome,
        "rejudged_id": item.rejudged_id,
        "verdict_state": verdict.state if verdict else None,
        "baseline_run_id": verdict.baseline_run_id if verdict else None,
        "shortfall": item.shortfall,
    }


def _line(item: Any) -> str:
    head = f"run {item.run_id} ({item.retriever}): "
    if item.outcome == "invalid":
        return head + "skipped, an invalid run is never compared"
    if item.outcome == "current":
        return head + "already judged against these labels"
    if item.outcome == "already":
        return head + f"re-judged before, as run {item.rejudged_id}"
    verdict = item.verdict
    against = f" against run {verdict.baseline_run_id}" if verdict.baseline_run_id else ""
    line = f"{head}re-judged as run {item.rejudged_id}: {verdict.state}{against}"
    return f"{line} ({item.shortfall})" if item.shortfall else line

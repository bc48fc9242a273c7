"""``retrieval-eval sets promote`` and ``sets rejudge``: the next version of a set from
judgments, and past runs scored again against its labels.

``promote`` exits 2 on bad input (an unreadable judgments file, named by line), when lint
finds errors in the new version (printed; nothing written) unless ``--force``, when the set file
changed since it was read (another promote: nothing written, run it again) and when the file
cannot be written (a full disk: the old file is kept). ``rejudge`` reads
and writes an existing store only (a missing one is exit 2, nothing created); an unknown set or
run id is exit 2.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option, file_option, format_option, output_option
from retrieval_eval.cli.sets_cmd import sets


def _run_ids(value: str | None) -> list[int] | None:
    if value is None:
        return None
    try:
        ids = [int(part) for part in value.split(",") if part.strip()]
    except ValueError:
        raise click.BadParameter(
            f"{value!r}: give run ids separated by commas, e.g. 3,4,7"
        ) from None
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
@format_option("text", "json")
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
    from retrieval_eval.workflows.labelled_run import resolve_set
    from retrieval_eval.workflows.rejudge import rejudge_set

    if runs is not None and since is not None:
        raise click.UsageError("give --runs or --since, not both")
    ids = _run_ids(runs)
    config = load_config(config_path)
    golden = resolve_set(config, set_name)
    when = since.replace(tzinfo=UTC) if since is not None else None
    done = rejudge_set(config, golden, db, ids=ids, since=when)
    if fmt == "json":
        from retrieval_eval.formats.jsonio import dumps

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
    return {
        "run_id": item.run_id,
        "retriever": item.retriever,
        "outcome": item.outcome,
        "rejudged_id": item.rejudged_id,
        "verdict_state": item.verdict_state,
        "baseline_run_id": item.baseline_run_id,
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
    against = f" against run {item.baseline_run_id}" if item.baseline_run_id else ""
    line = f"{head}re-judged as run {item.rejudged_id}: {item.verdict_state}{against}"
    return f"{line} ({item.shortfall})" if item.shortfall else line


@sets.command("promote")
@click.argument("set_name", metavar="SET")
@file_option(
    "--judgments",
    "judgments_path",
    "A judgments file (JSONL or CSV), as `sets pool` writes it, graded.",
)
@click.option(
    "--from-store",
    is_flag=True,
    help="Take the set's judgments stored in the store (`sets judge import`, the dashboard's "
    "review queue), with --judgments' rows if both are given.",
)
@output_option("Where the new version goes (.yaml or .json); default: the set's own file.")
@click.option("--force", is_flag=True, help="Write it even when lint finds errors in it.")
@click.option("--retriever", default=None, help="Lint's dead-label check against this retriever.")
@config_option
@db_option
def promote(
    set_name: str,
    judgments_path: str | None,
    from_store: bool,
    output: str | None,
    force: bool,
    retriever: str | None,
    config_path: str | None,
    db: str | None,
) -> None:
    """Write the next version of SET with the judgments merged in (a version number and a
    changelog entry), after lint: a version lint finds errors in is refused unless --force."""
    from retrieval_eval.cli.output_file import check_writable, output_errors
    from retrieval_eval.lint.render import RENDERERS
    from retrieval_eval.safety.files import FileWriteError
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.promote import PromoteJob, PromoteWorkflow

    if judgments_path is None and not from_store:
        raise click.UsageError("give the judgments: --judgments FILE, --from-store, or both")
    option = "--output" if output else None  # else the set's own file: no option to blame
    job = PromoteJob(
        config_path=config_path,
        db=db,
        set=set_name,
        judgments_file=judgments_path,
        from_store=from_store,
        output=output,
        force=force,
        retriever=retriever,
    )
    flow = PromoteWorkflow(job)
    flow.check_target = lambda target: check_writable(str(target), option)
    try:
        outcome = run_in_process(flow)
    except FileWriteError as exc:
        with output_errors(str(exc.path), option):
            raise exc from None
    entry = outcome.entry
    if outcome.blocked:
        click.echo(RENDERERS["text"](outcome.report), nl=False, err=True)
        for problem in outcome.problems:
            click.echo(f"  ERROR promote: {problem}", err=True)
        if not outcome.written:
            click.echo(
                f"version {entry.version} of {outcome.set_identifier!r} not written: fix "
                "the findings above, or write it anyway with --force",
                err=True,
            )
            raise SystemExit(2)
    click.echo(
        f"wrote {outcome.target}: set {outcome.set_identifier!r} version {entry.version}: "
        f"{len(entry.added)} target(s) added, {len(entry.removed)} removed, "
        f"{len(entry.regraded)} regraded, {len(entry.not_relevant)} judged not relevant, "
        f"{len(entry.questions_added)} question(s) added; "
        f"raters: {', '.join(entry.raters) or 'none'}"
        + (" (written despite lint errors: --force)" if outcome.blocked else "")
    )
    click.echo(
        f"labels fingerprint {outcome.read.fingerprint[:12]} -> "
        f"{outcome.promoted.fingerprint[:12]}: `retrieval-eval sets rejudge "
        f"{outcome.set_identifier}` scores past runs against it. "
        "Comments and the old file's key order are not kept.",
        err=True,
    )

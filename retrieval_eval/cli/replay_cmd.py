"""``samples``, ``replay`` and ``drift``: production queries without labels (retrieval_eval.replay).

Exit codes: 0 done (drift is reported, not failed, unless ``--fail-on-drift``); 1 ranking drift
with ``--fail-on-drift``; 2 bad input (an unknown sample or retriever, a bad log row, a sample
whose queries its log no longer holds, a report stdout cannot take); 3 an
invalid replay (error rate past ``max_error_rate``) or an unreachable store (a replay is then
spooled: ``db flush`` compares and saves it later).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.aliases import old_option
from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import (
    FiniteFloatRange,
    config_option,
    format_option,
    index_version_option,
    limit_option,
    output_option,
)

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config
    from retrieval_eval.replay.record import ReplayRecord
    from retrieval_eval.store import Store


@contextlib.contextmanager
def _store(db: str | None, config: Config, *, read_only: bool = False) -> Iterator[Store]:
    """The store, created if missing; ``read_only`` (commands that only read) opens an existing
    one read-only and creates nothing (a store in a read-only folder reads)."""
    from retrieval_eval.store import open_store, open_store_to_read, resolve_store_url

    url = resolve_store_url(db, config)
    with open_store_to_read(url) if read_only else open_store(url) as store:
        yield store


@cli.group("samples")
def samples() -> None:
    """Query samples drawn from production logs (the config's ``samples:``)."""


@samples.command("build")
@click.argument("name")
@click.option("--refresh", is_flag=True, help="Draw again from the log even if one is stored.")
@db_option
@config_option
def samples_build(name: str, refresh: bool, db: str | None, config_path: str | None) -> None:
    """Draw sample NAME from its log and store it once (replays reuse the stored one)."""
    from collections import Counter

    from retrieval_eval.config.models import load_config
    from retrieval_eval.workflows.samples import stored_sample

    config = load_config(config_path)
    config.sample_spec(name)  # an unknown name before the store is opened
    with _store(db, config) as store:
        sample_id, sample, spec = stored_sample(config, store, name, refresh=refresh)
    buckets = Counter(q.bucket for q in sample.queries)
    shown = ", ".join(f"{b} {buckets[b]}" for b in ("head", "torso", "tail") if buckets[b])
    click.echo(
        f"sample {name} (id {sample_id}, fingerprint {sample.fingerprint}): "
        f"{len(sample.queries)} queries drawn ({spec.method}"
        f"{f' {spec.size}' if spec.size else ''}, seed {spec.seed}) from {sample.log_queries} "
        f"distinct queries ({sample.log_traffic} in all); {shown}; stored {sample.privacy}"
    )


@samples.command("show")
@click.argument("name")
@limit_option("How many queries to show, most frequent first.")
@db_option
@config_option
def samples_show(name: str, limit: int, db: str | None, config_path: str | None) -> None:
    """The stored sample NAME's queries, most frequent first (in their stored form)."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import UnknownNameError

    config = load_config(config_path)
    with _store(db, config, read_only=True) as store:
        found = store.replays.latest_sample(name)
    if found is None:
        raise UnknownNameError(
            f"no stored sample {name!r}: `retrieval-eval samples build {name}` draws it"
        )
    sample_id, sample = found
    click.echo(f"sample {name} (id {sample_id}, {sample.privacy}): {len(sample.queries)} queries")
    for q in sorted(sample.queries, key=lambda q: -q.count)[:limit]:
        click.echo(f"  {q.count:>6}  {q.bucket:<5}  {q.text}")


@cli.command("replay")
@click.argument("sample")
@click.argument("retriever")
@click.option(
    "--against", metavar="RETRIEVER", help="Compare with another retriever, replayed now."
)
@click.option(
    "--against-run", type=click.IntRange(1), metavar="ID", help="Compare with a stored replay."
)
@click.option(
    "--depth",
    "k",
    type=click.IntRange(1, 1000),
    default=None,
    help="Distinct ids kept per query, the depth RBO compares (default 10; config: replay.k).",
)
@old_option("--k", "k")
@click.option(
    "--persistence",
    "p",
    type=FiniteFloatRange(0, 1, min_open=True, max_open=True),
    default=None,
    help="RBO's persistence p (default 0.9; config: replay.p).",
)
@old_option("--p", "p")
@index_version_option
@click.option("--no-save", is_flag=True, help="Do not store the replay.")
@click.option("--fail-on-drift", is_flag=True, help="Exit 1 on ranking drift.")
@limit_option("How many of the most-changed queries to list.", default=10, minimum=0)
@old_option("--most", "limit")
@click.option(
    "--export-draft",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the most-changed queries as candidates to judge (.jsonl or .csv, by the suffix).",
)
@click.option(
    "--draft-captured-text",
    is_flag=True,
    help="Write the draft's queries as captured (read from the log again), not in their stored "
    "form: the file then holds what users typed. A hashed sample's draft needs it.",
)
@format_option("text", "json", "markdown")
@output_option("Write the report to FILE instead of stdout.")
@db_option
@config_option
def replay(
    sample: str,
    retriever: str,
    against: str | None,
    against_run: int | None,
    k: int | None,
    p: float | None,
    index_version: str | None,
    no_save: bool,
    fail_on_drift: bool,
    limit: int,
    export_draft: Path | None,
    draft_captured_text: bool,
    fmt: str,
    output: str | None,
    db: str | None,
    config_path: str | None,
) -> None:
    """Replay SAMPLE with RETRIEVER and show how its rankings moved (RBO, top-1 changes).

    Without --against, the comparison is with the previous replay of the same sample and
    retriever: a nightly replay shows what last night's index rebuild moved.
    """
    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import InvalidInputError, InvalidRunError
    from retrieval_eval.reports.replay import render_replay
    from retrieval_eval.store import resolve_store_url
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.replay import Replay, ReplayJob

    if against and against_run:
        raise click.UsageError("give --against RETRIEVER or --against-run ID, not both")
    from retrieval_eval.cli.output_file import check_writable

    if output not in (None, "-"):
        check_writable(output, "--output")
    if export_draft is not None:
        from retrieval_eval.labels.judgments import check_suffix

        check_suffix(export_draft, "--export-draft")
        check_writable(str(export_draft), "--export-draft")
    config = load_config(config_path)
    spec = config.sample_spec(sample)  # checked before any store or retriever is opened
    if export_draft is not None and not draft_captured_text:
        from retrieval_eval.replay.draft import refuse_hashed

        refuse_hashed(spec.privacy, sample, "--draft-captured-text")
    url = resolve_store_url(db, config)
    job = ReplayJob(
        config_path=config_path,
        sample=sample,
        retriever=retriever,
        against=against,
        against_run=against_run,
        k=k,
        p=p,
        index_version=index_version,
        save=not no_save,
        store_url=url,
    )
    # an unreachable store: replayed anyway and spooled (`db flush` compares and saves it)
    flow = Replay(job, config=config)
    outcome = run_in_process(flow)
    from retrieval_eval.cli.output_file import emit, output_errors

    # a report or draft that cannot be written still says what became of the replay, with the
    # exit code of its own failure when it has one
    kept = _kept(outcome, url, no_save)
    code = 3 if outcome.comparison.state == "invalid" else 2
    if outcome.problem is not None:
        code = outcome.problem_exit_code
    text = render_replay(outcome, fmt, limit)
    if fmt in ("text", "markdown") and outcome.replay_id is not None:
        gap = "\n" if fmt == "markdown" else ""  # Markdown: a paragraph after the last block
        text += f"{gap}{_saved(outcome, url)}\n"
    emit(text, output, "the replay's report", kept, code)
    if export_draft is not None:
        from retrieval_eval.replay.draft import write_draft

        texts = None
        if draft_captured_text:
            from retrieval_eval.workflows.samples import resolve_texts

            texts = resolve_texts(outcome.sample, spec, config.base_dir)
        with output_errors(str(export_draft), "--export-draft", kept, code):
            count = write_draft(outcome, export_draft, limit or 50, texts)
        click.echo(f"{count} candidates to judge written to {export_draft}", err=True)
    state = outcome.comparison.state
    if state == "invalid":  # exit 3; where the replay went when the store did not take it
        reasons = [*outcome.comparison.reasons, *([outcome.problem] if outcome.problem else [])]
        raise InvalidRunError("; ".join(reasons))
    failure = flow.failure(outcome)  # the store's, when the replay was spooled
    if failure is not None:
        raise failure
    if state == "empty":
        raise InvalidInputError(
            f"sample {sample} ({spec.source.path or 'its SQL query'}): "
            f"{'; '.join(outcome.comparison.reasons)}; once the log holds queries, "
            f"`retrieval-eval samples build {sample} --refresh` draws the sample again"
        )
    if state == "drift" and fail_on_drift:
        raise SystemExit(1)


def _saved(outcome: ReplayRecord, url: str) -> str:
    from retrieval_eval.store import mask_url

    rid = outcome.replay_id
    return (
        f"Saved as replay {rid} in {mask_url(url)}: `retrieval-eval sets pool SET --retrievers "
        f"{outcome.retriever} --replay {rid}` pools its most-changed queries"
    )


def _kept(outcome: ReplayRecord, url: str, no_save: bool) -> str:
    """What a report that could not be written leaves: the saved (or spooled) replay."""
    if outcome.replay_id is not None:
        return f"; the replay was saved: {_saved(outcome, url)}"
    if outcome.problem is not None:
        return f"; the replay was not saved: {outcome.problem}"
    return "; the replay was not to be saved (--no-save)" if no_save else ""


@cli.command("drift")
@click.argument("sample")
@click.argument("retriever")
@limit_option("How many replays to list, newest first.")
@db_option
@config_option
def drift(sample: str, retriever: str, limit: int, db: str | None, config_path: str | None) -> None:
    """The replays of SAMPLE by RETRIEVER, newest first: mean RBO and top-1 changed over time."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.formats.numbers import MISSING, decimal, pct

    config = load_config(config_path)
    with _store(db, config, read_only=True) as store:
        rows = store.replays.history(sample, retriever, limit)
    if not rows:
        click.echo(f"no replays of sample {sample} by {retriever} yet")
        return
    for r in rows:
        rbo = decimal(r.mean_rbo, 3)
        index = f"index {r.index_version or MISSING}"
        click.echo(
            f"{r.id:>5}  {r.run_date:%Y-%m-%d %H:%M}  {r.state:<8}  RBO {rbo}  "
            f"top-1 changed {pct(r.top1_changed)}  {index}  {r.query_count} queries"
            f"{f', {r.error_count} errors' if r.error_count else ''}"
        )

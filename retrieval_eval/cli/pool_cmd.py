"""``retrieval-eval sets pool SET --retrievers R1,R2``: the documents to judge, as a judgments file.

The candidates (:mod:`retrieval_eval.workflows.pool`) go to ``--output FILE`` (``.jsonl`` or
``.csv``, by its suffix) or to stdout as JSONL; what was written, the notes and, per retriever,
its hit rates beside its holes go to stderr, so stdout stays a judgments file. Exit codes: 0
written (also when there is nothing to judge); 2 bad input (an unknown set or retriever, a
retriever without a stored run on the set and no ``--fresh``, a bad judgments file, a corpus
that is not the set's, an unwritable output); 3 the store cannot be reached.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from retrieval_eval.cli.aliases import old_option
from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option, limit_option, output_option
from retrieval_eval.cli.sets_cmd import sets
from retrieval_eval.labels.pooling import DEPTH


def _names(ctx: click.Context, param: click.Parameter, value: str) -> list[str]:
    names = list(dict.fromkeys(part.strip() for part in value.split(",") if part.strip()))
    if not names:
        raise click.BadParameter("give one or more retriever names separated by commas")
    return names


@sets.command("pool")
@click.argument("set_name", metavar="SET")
@click.option(
    "--retrievers",
    required=True,
    callback=_names,
    metavar="R1,R2,...",
    help="Pool the latest stored run of each (or a run made now, with --fresh).",
)
@click.option(
    "--depth",
    type=click.IntRange(1, 1000),
    default=DEPTH,
    show_default=True,
    help="How deep each retriever's ranking is pooled: its top DEPTH documents.",
)
@output_option("A .jsonl or .csv judgments file (default: JSONL on stdout).")
@click.option(
    "--fresh",
    is_flag=True,
    help="Run the retrievers now (at --depth, not saved) instead of reading stored runs.",
)
@click.option(
    "--judgments",
    "judgments_files",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A judgments file whose graded pairs are left out, as the store's are (repeatable).",
)
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(exists=True, path_type=Path),
    default=None,
    help="The corpus for lint's completeness candidates (default: a retriever's).",
)
@click.option("--no-lint", is_flag=True, help="Leave lint's completeness candidates out.")
@click.option(
    "--replay",
    "replay_id",
    type=click.IntRange(1),
    default=None,
    metavar="ID",
    help="Add a stored replay's most-changed queries that are not questions of the set.",
)
@limit_option("How many of the replay's most-changed queries.", default=50)
@old_option("--most", "limit")
@click.option(
    "--captured-text",
    is_flag=True,
    help="With --replay: its queries as captured (read from the log again), not in their stored "
    "form: the file then holds what users typed. A hashed sample's replay needs it.",
)
@click.option("--no-texts", is_flag=True, help="Leave the documents' texts out.")
@db_option
@config_option
def pool(
    set_name: str,
    retrievers: list[str],
    depth: int,
    output: str | None,
    fresh: bool,
    judgments_files: tuple[Path, ...],
    corpus_path: Path | None,
    no_lint: bool,
    replay_id: int | None,
    limit: int,
    captured_text: bool,
    no_texts: bool,
    db: str | None,
    config_path: str | None,
) -> None:
    """Gather the documents to judge for SET: per question the unlabelled documents of each
    retriever's top DEPTH, lint's completeness candidates and, with --replay, a replay's moved
    queries; each row says where it came from. Per retriever its holes (the share of its top
    DEPTH that is unjudged) are printed beside its hit rates."""
    from retrieval_eval.cli.output_file import check_writable, output_errors
    from retrieval_eval.labels.judgments import check_suffix
    from retrieval_eval.safety.files import FileWriteError
    from retrieval_eval.workflows.base import run_in_process
    from retrieval_eval.workflows.pool import PoolJob, PoolWorkflow

    if output is not None:
        check_suffix(Path(output), "--output")
        check_writable(output, "--output")
    job = PoolJob(
        config_path=config_path,
        db=db,
        set=set_name,
        retrievers=retrievers,
        depth=depth,
        fresh=fresh,
        judgments_files=[str(file) for file in judgments_files],
        corpus=str(corpus_path) if corpus_path is not None else None,
        lint=not no_lint,
        replay_id=replay_id,
        most=limit,
        texts=not no_texts,
        captured_text=captured_text,
        output=output,
    )
    try:
        outcome = run_in_process(PoolWorkflow(job))
    except FileWriteError as exc:
        assert output is not None  # only the rows file is written
        with output_errors(output, "--output"):
            raise exc from None
    if output is None:
        import orjson

        sys.stdout.buffer.write(
            b"".join(orjson.dumps(r.model_dump(mode="json")) + b"\n" for r in outcome.rows)
        )
        sys.stdout.flush()
    _summary(outcome, output or "stdout")


def _summary(outcome: Any, where: str) -> None:
    from retrieval_eval.formats.numbers import pct

    err = sys.stderr
    texts = sum(1 for r in outcome.rows if r.text)
    click.echo(
        f"{len(outcome.rows)} candidates to judge for {outcome.questions} questions of "
        f"{outcome.set_identifier} written to {where} ({texts} with their text)",
        file=err,
    )
    for p in outcome.pooled:
        click.echo(
            f"  {p.name}: {p.origin}: top-1 {pct(p.top1_hit_rate)}, top-3 "
            f"{pct(p.top3_hit_rate)}, holes@{p.holes_depth} {pct(p.holes_share)} "
            f"({p.holes_unjudged} of {p.holes_slots} unjudged)",
            file=err,
        )
    for note in outcome.notes:
        click.echo(f"  note: {note}", file=err)

"""``retrieval-eval sets lint SET``: check a golden set's health (:mod:`retrieval_eval.lint`).

Exit codes: 0 clean or warnings only, 1 error findings (dead labels), 2 bad input (an unknown
set or retriever, a missing or unreadable corpus). The result store is only read, never created:
a missing store, or one at another schema revision or unreachable, skips the "never found" check
with the reason.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option, format_option, output_option
from retrieval_eval.cli.sets_cmd import sets

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config


@sets.command("lint")
@click.argument("set_name", metavar="SET")
@click.option("--retriever", default=None, help="Check ids against it (dead labels); its corpus.")
@click.option(
    "--corpus",
    "corpus_path",
    type=click.Path(),
    default=None,
    help="A BEIR corpus.jsonl or a folder of .md/.txt files (form and completeness checks).",
)
@format_option("text", "json", "markdown")
@output_option("Write the lint report to FILE instead of stdout.")
@config_option
@db_option
@click.pass_context
def lint(
    ctx: click.Context,
    set_name: str,
    retriever: str | None,
    corpus_path: str | None,
    fmt: str,
    output: str | None,
    config_path: str | None,
    db: str | None,
) -> None:
    """Lint a golden set: dead labels, form honesty, duplicates, candidate labels, never-found
    questions, and the smallest drop the set can detect. Exit 1 when errors are found."""
    from contextlib import nullcontext

    from retrieval_eval.cli.output_file import check_writable, emit
    from retrieval_eval.config.models import load_config
    from retrieval_eval.lint import run_lint
    from retrieval_eval.lint.render import RENDERERS
    from retrieval_eval.workflows.labelled_run import opened_retriever, resolve_set
    from retrieval_eval.workflows.lint import stored_for_lint

    if output not in (None, "-"):
        check_writable(output, "--output")
    config = load_config(config_path)
    golden_set = resolve_set(config, set_name)
    corpus = _corpus(corpus_path)
    store, store_problem = _read_only_store(db, config)
    thresholds = (
        config.section_for(golden_set.identifier, retriever, "thresholds")
        if retriever
        else config.thresholds
    )
    # the power figure at each depth the evaluation gates (its run.depths); without a
    # retriever, at the depths of the newest stored run of the set
    depths = (
        config.section_for(golden_set.identifier, retriever, "run").depths if retriever else None
    )
    try:
        stored = stored_for_lint(store, golden_set) if store is not None else None
        with opened_retriever(config, retriever) if retriever else nullcontext() as built:
            report = run_lint(
                golden_set,
                retriever=built,
                corpus=corpus,
                stored=stored,
                options=config.lint,
                thresholds=thresholds,
                depths=depths,
            )
    finally:
        if store is not None:
            store.close()
    if store_problem:
        report.checks_skipped["never_found"] = store_problem
    emit(RENDERERS[fmt](report), output, "the lint report")
    if report.has_errors:
        ctx.exit(1)


def _corpus(path: str | None) -> Path | None:
    from retrieval_eval.errors import ConfigError

    if path is None:
        return None
    corpus = Path(path)
    if not (corpus.is_file() or corpus.is_dir()):
        raise ConfigError(
            f"--corpus {corpus}: no such file or folder; give a BEIR corpus.jsonl or a folder of "
            ".md/.txt files"
        )
    return corpus


def _read_only_store(db: str | None, config: Config) -> tuple[Any, str | None]:
    """A reader of the store, or None and why; never creates a file, schema or table. Opened
    like ``runs list`` opens it, so the reasons read the same (no store yet, another revision)."""
    from retrieval_eval.cli.history_cmd import open_to_read
    from retrieval_eval.errors import NoStoreError, StoreUnavailableError

    try:
        return open_to_read(db, config), None
    except (NoStoreError, StoreUnavailableError) as exc:
        return None, str(exc)

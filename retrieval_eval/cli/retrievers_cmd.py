"""``retrieval-eval retrievers``: what can be evaluated."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.options import config_option

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config


@cli.group("retrievers")
def retrievers() -> None:
    """Retrievers and adapter types."""


@retrievers.command("list")
@config_option
def list_retrievers(config_path: str | None) -> None:
    """List configured retrievers and the adapter types available for the config (those that
    need an optional extra say whether it is installed)."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.retrievers.extras import ADAPTER_EXTRAS, installed, pip_command
    from retrieval_eval.retrievers.registry import adapter_types

    config = load_config(config_path)
    registry = config.retriever_registry
    click.echo("Retrievers:")
    names = registry.names()
    for name in names:
        click.echo(f"  {name}\t{registry.describe(name)}")
    if not names:
        click.echo("  (none configured; a 'module:attribute' import path also works)")
    click.echo("Adapter types:")
    for name, target in sorted(adapter_types().items()):
        # a type with an optional extra says whether it is installed, and how to install it
        state = installed(name)
        note = (
            ""
            if state is None
            else "\tinstalled"
            if state
            else f"\tnot installed: {pip_command(ADAPTER_EXTRAS[name][0])}"
        )
        click.echo(f"  {name}\t{target}{note}")


@retrievers.command("check")
@click.argument("name", metavar="NAME")
@click.option("--question", default=None, help="The question to ask (default: see below).")
@config_option
def check_retriever(name: str, question: str | None, config_path: str | None) -> None:
    """Build retriever NAME as the DAG would and answer one question.

    The question defaults to the first question of the set of the first configured evaluation
    using NAME, else "test". Prints the ids returned, the latency and the adapter type; a
    retriever that cannot be built exits 2 with the reason.
    """
    import time

    from retrieval_eval.config.models import load_config
    from retrieval_eval.errors import RetrieverError
    from retrieval_eval.workflows.labelled_run import opened_retriever

    config = load_config(config_path)
    registry = config.retriever_registry
    registry.check(name)
    text = question if question is not None else _default_question(config, name)
    limit = config.run.settings().fetch_limit  # the run's ask: its deepest depth, overfetched
    registry.prepare(name)
    with opened_retriever(config, name) as retriever:
        started = time.perf_counter()
        try:
            ids = list(retriever.retrieve(text, limit))
        except Exception as exc:  # the retriever's own failure, said as the run would
            raise RetrieverError(
                f"retriever {name!r} was built but failed to answer: {type(exc).__name__}: {exc}"
            ) from exc
        latency_ms = (time.perf_counter() - started) * 1000
    click.echo(f"Retriever: {name} ({_adapter_kind(config, name)})")
    click.echo(f"Question: {text}")
    click.echo(f"Ids ({len(ids)} of at most {limit}): {', '.join(map(str, ids)) or '(none)'}")
    click.echo(f"Latency: {latency_ms:.1f} ms")


def _default_question(config: Config, name: str) -> str:
    for evaluation in config.evaluations:
        if evaluation.retriever == name:
            questions = config.golden_sets.get(evaluation.set).questions
            if questions:
                return questions[0].question
    return "test"


def _adapter_kind(config: Config, name: str) -> str:
    spec = config.retrievers.get(name)
    if spec is not None:
        return f"adapter type {spec.get('type')!r}"
    return "import path" if ":" in name else "entry point"

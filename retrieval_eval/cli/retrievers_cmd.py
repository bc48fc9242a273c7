"""``retrieval-eval retrievers``: what can be evaluated."""

from __future__ import annotations

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.options import config_option


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

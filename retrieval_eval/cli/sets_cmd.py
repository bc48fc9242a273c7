"""``retrieval-eval sets``: list and validate golden sets."""

from __future__ import annotations

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.options import config_option


@cli.group("sets")
def sets() -> None:
    """Golden question sets."""


@sets.command("list")
@config_option
def list_sets(config_path: str | None) -> None:
    """List the sets the config and installed packages provide."""
    from retrieval_eval.config.models import load_config

    config = load_config(config_path)
    registry = config.golden_sets
    if not registry.names():
        click.echo("no golden sets configured (add 'sets:' to the config file)")
        return
    for name in registry.names():
        golden_set = registry.get(name)
        click.echo(
            f"{name}\t{len(golden_set)} questions\t{golden_set.fingerprint[:12]}\t"
            f"{registry.source(name)}"
        )


@sets.command("validate")
@click.argument("files", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--identifier", default=None, help="Set identifier for JSONL/CSV files.")
def validate(files: tuple[str, ...], identifier: str | None) -> None:
    """Validate set files, reporting every problem; exit 2 if any."""
    from retrieval_eval.errors import GoldenSetError
    from retrieval_eval.golden import load_golden_set

    problems: list[str] = []
    for file in files:
        try:
            golden_set = load_golden_set(file, identifier=identifier)
        except GoldenSetError as exc:
            problems.extend(exc.problems)
            continue
        click.echo(f"ok: {file}: set {golden_set.identifier!r}, {len(golden_set)} questions")
    if problems:
        for problem in problems:
            click.echo(problem, err=True)
        click.echo(f"{len(problems)} problem(s) found", err=True)
        raise SystemExit(2)

"""``retrieval-eval``: a thin command layer over the library. It never imports Airflow.

Exit codes: 0 success; 1 a regression with ``--fail-on-regression``; 2 usage or invalid input;
3 an invalid run or an unreachable store. Errors go to stderr without a traceback unless
``--debug``. Heavy imports happen inside commands so ``--help`` stays fast.
"""

from __future__ import annotations

import sys
from typing import Any

import click

from retrieval_eval.errors import RetrievalEvalError


class _Group(click.Group):
    """Turns library errors into a one-line message and the exit code of their kind; with
    ``--debug`` the traceback comes first, and the exit code stays the error's."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RetrievalEvalError as exc:
            from retrieval_eval.redaction import redact

            if ctx.meta.get("retrieval_eval.debug"):
                import traceback

                click.echo(redact(traceback.format_exc()).rstrip("\n"), err=True)
            click.echo(f"error: {redact(str(exc))}", err=True)
            ctx.exit(exc.exit_code)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name="retrieval-eval")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Evaluate retrieval against golden question sets and catch regressions."""
    ctx.meta["retrieval_eval.debug"] = debug


def _register() -> None:
    # one module per command group; each adds itself to ``cli``
    from retrieval_eval.cli import (  # noqa: F401
        compare_cmd,
        db_cmd,
        history_cmd,
        import_cmd,
        lint_cmd,
        retrievers_cmd,
        run_cmd,
        sets_cmd,
    )


_register()


def main(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="retrieval-eval")


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

"""``retrieval-eval``: a thin command layer over the library. It never imports Airflow.

Exit codes: 0 success; 1 a regression with ``--fail-on-regression``; 2 usage or invalid input;
3 an invalid run or an unreachable store; 130 interrupted (Ctrl-C), 143 terminated (SIGTERM).
Errors go to stderr without a traceback unless ``--debug``. Heavy imports happen inside
commands so ``--help`` stays fast. How the process ends (SIGTERM, threads left running):
:mod:`retrieval_eval.cli.process`.
"""

from __future__ import annotations

import codecs
import contextlib
import sys
from typing import Any

import click

from retrieval_eval import DISTRIBUTION
from retrieval_eval.errors import Interrupted, RetrievalEvalError


class _Group(click.Group):
    """Turns library errors into a one-line message and the exit code of their kind; with
    ``--debug`` the traceback comes first, and the exit code stays the error's."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except RetrievalEvalError as exc:
            self._fail(ctx, str(exc), exc.exit_code)
        except OSError as exc:
            from retrieval_eval.cli.output_file import STDOUT_ERRNOS, from_stdout

            if exc.errno not in STDOUT_ERRNOS or from_stdout(exc):
                raise  # stdout's: the message and exit code of :func:`_command`
            self._fail(ctx, _unwritable(exc), 3)
        except KeyboardInterrupt as exc:  # where no command said what it had saved
            interrupted = Interrupted.by(exc, "before the command finished")
            self._fail(ctx, str(interrupted), interrupted.exit_code)
        except UnicodeEncodeError as exc:
            # the net under the checks where text enters (retrieval_eval/safety/surrogates.py): a
            # name given with a byte that is not UTF-8 (`runs list $'set\xff' ...`) is bad input
            from retrieval_eval.safety.limits import quote

            char = exc.object[exc.start : exc.end] if isinstance(exc.object, str) else ""
            self._fail(
                ctx,
                f"a value holds {quote(char)}, a byte "
                "that is not UTF-8 text, which the store and the reports cannot take; check the "
                "arguments, the environment variables and the files this command read",
                2,
            )

    @staticmethod
    def _fail(ctx: click.Context, message: str, exit_code: int) -> None:
        from retrieval_eval.safety.redaction import redact

        if ctx.meta.get("retrieval_eval.debug"):
            import traceback

            click.echo(redact(traceback.format_exc()).rstrip("\n"), err=True)
        click.echo(f"error: {redact(message)}", err=True)
        ctx.exit(exit_code)


def _unwritable(exc: OSError) -> str:
    """A write no command handled (a full disk, an I/O error) that was not stdout's: exit 3,
    naming the file when the error does (``--debug`` shows where it came from)."""
    where = f"cannot write {exc.filename}" if exc.filename else "a write to a file failed"
    return (
        f"{where} ({exc.strerror or type(exc).__name__}; not stdout): free some space or fix "
        "the device, then run the command again (--debug shows where it failed)"
    )


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.version_option(package_name=DISTRIBUTION)
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """Evaluate retrieval against golden question sets and catch regressions."""
    ctx.meta["retrieval_eval.debug"] = debug


def _register() -> None:
    # one module per command group; each adds itself to ``cli``
    from retrieval_eval.cli import (  # noqa: F401
        airflow_cmd,
        compare_cmd,
        db_cmd,
        history_cmd,
        import_cmd,
        judge_cmd,
        lint_cmd,
        pool_cmd,
        replay_cmd,
        retrievers_cmd,
        run_cmd,
        serve_cmd,
        sets_cmd,
        versions_cmd,
    )


_register()


def _escape_unprintable(exc: UnicodeError) -> tuple[str | bytes, int]:
    """A byte that was not UTF-8 (a file name's) goes out as that byte; any other lone
    surrogate as its escape, ``\\ud800``. Any other character the stream's encoding cannot
    hold (a CJK id on a latin-1 pipe) fails as before: escaping it would change the output
    silently (a JSON report would no longer parse)."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    code = ord(exc.object[exc.start])  # one character at a time: the next may be another case
    if not 0xD800 <= code <= 0xDFFF:
        raise exc
    if 0xDC80 <= code <= 0xDCFF:  # surrogateescape's own range: the original byte
        return bytes([code - 0xDC00]), exc.start + 1
    return f"\\u{code:04x}", exc.start + 1


def printable_streams() -> None:
    """Make stdout and stderr print what a command was given, whatever it holds.

    A path or name with a byte that is not UTF-8 reaches Python as a lone surrogate, and a
    stream whose error handler is "strict" (a UTF-8 locale but C.UTF-8, PYTHONIOENCODING=utf-8)
    or "surrogateescape" (for a "\\ud800" from a JSON file) failed printing it, after the
    command's work was done (a "written to" line, an "ok:" line).
    """
    codecs.register_error("retrieval_eval.escape", _escape_unprintable)
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) in ("strict", "surrogateescape"):
            with contextlib.suppress(AttributeError, ValueError):  # not a TextIOWrapper
                stream.reconfigure(errors="retrieval_eval.escape")  # type: ignore[union-attr]


def main(argv: list[str] | None = None) -> None:
    from retrieval_eval.cli.output_file import watch_stdout
    from retrieval_eval.cli.process import run_process

    watch_stdout()  # before printable_streams, which sets the watched stream's error handler
    printable_streams()
    run_process(lambda: _command(argv))


def _command(argv: list[str] | None) -> None:
    """The command; output stdout cannot take (a full disk, ``> /dev/full``) ends any command
    with a one-line error and exit 2, not a traceback (``run`` names its saved run itself)."""
    from retrieval_eval.cli.output_file import from_stdout, stdout_failure

    ended: SystemExit | None = None
    try:
        try:
            cli.main(args=argv, prog_name="retrieval-eval")
        except SystemExit as exc:
            ended = exc
        sys.stdout.flush()
    except OSError as exc:
        if not from_stdout(exc):
            raise
        error = stdout_failure(exc, "the output", "> FILE")
        click.echo(f"error: {error}", err=True)
        sys.exit(error.exit_code)
    if ended is not None:
        raise ended


if __name__ == "__main__":  # pragma: no cover
    main(sys.argv[1:])

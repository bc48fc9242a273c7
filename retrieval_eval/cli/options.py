"""Options several commands share."""

from __future__ import annotations

import math
from typing import Any

import click

config_option = click.option(
    "--config",
    "config_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Config file (default: $RETRIEVAL_EVAL_CONFIG, else ./retrieval_eval.yaml).",
)


def format_option(*formats: str, help: str | None = None) -> Any:
    """``--format`` (into ``fmt``) choosing among ``formats``; the first is the default."""
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(list(formats)),
        default=formats[0],
        show_default=True,
        help=help or f"How the output is written: {', '.join(formats)}.",
    )


def limit_option(help: str, *, default: int = 20, minimum: int = 1) -> Any:
    """``--limit N``: how many rows a listing shows; ``help`` says of what. Every count option
    of the CLI is this one name (``--most`` is an old spelling, :mod:`~retrieval_eval.cli.aliases`)."""
    return click.option(
        "--limit",
        type=click.IntRange(minimum),
        default=default,
        show_default=True,
        help=help,
    )


def file_option(name: str, dest: str, help: str, *, required: bool = False) -> Any:
    """An option naming one file (``FILE`` in the help; a folder is refused), None when it is
    not given (a required one has no default, so click refuses the command without it): the
    commands' file options declared one way."""
    given: dict[str, Any] = {"required": True} if required else {"default": None}
    return click.option(
        name, dest, type=click.Path(dir_okay=False), metavar="FILE", help=help, **given
    )


def output_option(help: str) -> Any:
    """``--output``/``-o``: a file to write instead of stdout (None when not given)."""
    return click.option("--output", "-o", type=click.Path(dir_okay=False), default=None, help=help)


report_format_option = format_option(
    "text",
    "json",
    "markdown",
    "csv",
    help="Report format on stdout (csv: one row per question with every per-question metric).",
)


summary_option = click.option(
    "--summary",
    is_flag=True,
    help="Print only the headline: verdict, top-1/top-3 with 95% intervals and deltas, flips.",
)


def check_summary(fmt: str, summary: bool) -> None:
    """``--summary`` exists in every format but CSV (a per-question table): a usage error."""
    if summary and fmt == "csv":
        raise click.UsageError("--summary has no CSV form: the CSV report is one row per question")


def _index_version(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    from retrieval_eval.evaluation.results import MAX_INDEX_VERSION, index_version_text

    if value is None:
        return None
    if not value.strip() or len(value.strip()) > MAX_INDEX_VERSION:
        raise click.BadParameter(
            f"an index version is a label of 1 to {MAX_INDEX_VERSION} characters, such as "
            f"2026-11-30.2; got {len(value.strip())} characters"
        )
    return index_version_text(value)


index_version_option = click.option(
    "--index-version",
    metavar="V",
    callback=_index_version,
    default=None,
    help="The index build measured (e.g. 2026-11-30.2), stored with the run; history, the "
    "dashboard and alerts name it.",
)


def non_negative(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Reject negative thresholds instead of silently using a default."""
    if value is not None and value < 0:
        raise click.BadParameter(f"must be zero or more, got {value:g}")
    return value


class FiniteFloatRange(click.FloatRange):
    """click's FloatRange that also refuses NaN and infinity (exit 2, naming the option): NaN
    compares false with both bounds, so the plain range check lets ``--persistence nan`` through. Every
    float option of the CLI is one of these."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(
                f"{value!r} is not a number in the range {self._describe_range()}", param, ctx
            )
        return number


class RunIdType(click.ParamType):
    """A stored run's id: an integer a store can hold (1 to 2**31 - 1), checked before any store
    is opened or any run starts, so PostgreSQL never sees an id out of its INTEGER range."""

    name = "run_id"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> int:
        from retrieval_eval.store.names import MAX_RUN_ID, storable_run_id

        run_id = value if isinstance(value, int) else click.INT.convert(value, param, ctx)
        if not storable_run_id(run_id):
            self.fail(f"no stored run with id {run_id} (run ids are 1 to {MAX_RUN_ID})", param, ctx)
        return run_id


RUN_ID = RunIdType()

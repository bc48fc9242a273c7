"""Every float option of every command refuses NaN and infinity with exit 2 naming the option,
before any work starts: NaN compares false with both ends of a range, so a plain range check let
``replay --p nan`` reach the comparison and ``run --timeout nan`` declare the run invalid."""

from __future__ import annotations

from collections.abc import Iterator

import click
import pytest
from click.testing import CliRunner

from retrieval_eval.cli import cli


def _commands(group: click.Group, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for name, command in group.commands.items():
        if isinstance(command, click.Group):
            yield from _commands(command, (*path, name))
        else:
            yield (*path, name)


def _command(path: tuple[str, ...]) -> click.Command:
    command: click.Command = cli
    for name in path:
        assert isinstance(command, click.Group)
        command = command.commands[name]
    return command


def _float_options() -> list[tuple[tuple[str, ...], click.Option]]:
    found = []
    for path in _commands(cli):
        for param in _command(path).params:
            if isinstance(param, click.Option) and isinstance(
                param.type, click.types.FloatParamType
            ):
                found.append((path, param))
    return found


FLOAT_OPTIONS = _float_options()


def test_the_float_options_are_found() -> None:
    named = {(" ".join(path), param.opts[0]) for path, param in FLOAT_OPTIONS}
    assert {
        ("replay", "--persistence"),
        ("run", "--timeout"),
        ("run", "--max-error-rate"),
        ("compare", "--alpha"),
    } <= named


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf"])
@pytest.mark.parametrize(
    ("path", "option"), FLOAT_OPTIONS, ids=[f"{' '.join(p)} {o.opts[0]}" for p, o in FLOAT_OPTIONS]
)
def test_nan_and_infinity_are_bad_input_naming_the_option(
    path: tuple[str, ...], option: click.Option, value: str
) -> None:
    # the option before the arguments: it is converted first, so its error is the one shown
    arguments = ["x"] * sum(isinstance(p, click.Argument) for p in _command(path).params)
    done = CliRunner().invoke(cli, [*path, option.opts[0], value, *arguments])
    assert done.exit_code == 2, done.output
    assert f"Invalid value for '{option.opts[0]}'" in done.output
    assert value.lower() in done.output.lower() and "Traceback" not in done.output

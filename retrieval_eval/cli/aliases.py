"""Old spellings of commands and options, kept as hidden aliases of the new ones.

One mechanism for every rename (``history`` to ``runs list``, ``--most`` to ``--limit``): the
old spelling runs the new one unchanged (same stdout, same exit code), is left out of
``--help`` and the generated reference, and prints ``note: `OLD` is now `NEW``` once to
stderr, so no user script breaks and its author learns the new spelling.
"""

from __future__ import annotations

import copy
import functools
from typing import Any

import click
from click.core import ParameterSource

_NOTED = "retrieval_eval.noted"


def note_renamed(ctx: click.Context, old: str, new: str) -> None:
    """Print on stderr, once per invocation, that ``old`` is now spelled ``new``."""
    noted: set[str] = ctx.find_root().meta.setdefault(_NOTED, set())
    if old not in noted:
        noted.add(old)
        click.echo(f"note: `{old}` is now `{new}`", err=True)


def old_command(
    group: click.Group, old: str, command: click.Command, new: str, said: str | None = None
) -> None:
    """Add ``old`` to ``group``: a hidden copy of ``command`` (its options and arguments) that
    notes the rename, then runs it. ``new`` is the new spelling from the top (``runs list``);
    ``said``, the old one from the top when the note must name its group (``db replay``)."""
    alias = copy.copy(command)
    alias.name = old
    alias.hidden = True
    callback = command.callback
    assert callback is not None

    @functools.wraps(callback)
    def forward(*args: Any, **kwargs: Any) -> Any:
        note_renamed(click.get_current_context(), said or old, new)
        return callback(*args, **kwargs)

    alias.callback = forward
    group.add_command(alias, old)


def old_option(old: str, dest: str) -> Any:
    """A hidden option ``old`` that gives its value to the option whose parameter is ``dest``
    (converted and checked by it), noting the rename. Declare it beside the new option."""

    def forward(ctx: click.Context, param: click.Parameter, value: str | None) -> None:
        if value is None:
            return
        target = next(p for p in ctx.command.params if p.name == dest and p is not param)
        note_renamed(ctx, old, "/".join(sorted(target.opts, key=len)))
        ctx.params[dest] = target.process_value(ctx, value)
        # so the new option's default, processed after it, does not replace the value given
        ctx.set_parameter_source(dest, ParameterSource.COMMANDLINE)

    name = f"old_{old.lstrip('-').replace('-', '_')}"
    return click.option(old, name, default=None, hidden=True, expose_value=False, callback=forward)

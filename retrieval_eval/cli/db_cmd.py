"""``retrieval-eval db``: create or upgrade the store's schema, flush spooled runs, show the URL.

``db_option`` (``--db URL``) is shared by every command that touches the store.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.aliases import old_command
from retrieval_eval.cli.options import config_option

if TYPE_CHECKING:
    from retrieval_eval.config.models import Config

db_option = click.option(
    "--db",
    default=None,
    metavar="URL",
    help="Result store: sqlite:///path or postgresql://user@host:port/db (default: "
    "$RETRIEVAL_EVAL_DB, the config's 'store:', else ~/.retrieval-eval/results.sqlite).",
)


def store_url_for(db: str | None, config_path: str | None) -> str:
    """The store URL by lookup order; the config is read only when it can matter."""
    from retrieval_eval.config.models import load_config
    from retrieval_eval.store import resolve_store_url

    return resolve_store_url(db, None if db else load_config(config_path))


# ``sqlite:///path`` with nothing SQLAlchemy could read differently: no query, no escapes, no
# ``:memory:`` (the store layer rejects that one with its own message)
_PLAIN_SQLITE = re.compile(r"sqlite:///([^?#%:@]+)")


def plain_sqlite_file(db: str | None, config: Config | None) -> Path | None:
    """The SQLite file the store lookup lands on, told without importing SQLAlchemy.

    The lookup order of :func:`retrieval_eval.store.resolve_store_url` (``--db``,
    ``$RETRIEVAL_EVAL_DB``, the config's ``store:``, ``$RETRIEVAL_EVAL_HOME/results.sqlite``),
    for a plain ``sqlite:///path`` URL only; None for any other URL, which the store layer
    parses (``tests/cli/test_startup.py`` checks the two agree). ``config`` may be None when
    ``db`` is given (it is not read then).
    """
    env = os.environ.get("RETRIEVAL_EVAL_DB")
    base = None
    if db:
        url = db
    elif env:
        url = env
    elif config is not None and config.store:
        url, base = config.store, config.base_dir
    else:
        home = Path(os.environ.get("RETRIEVAL_EVAL_HOME") or "~/.retrieval-eval").expanduser()
        url = f"sqlite:///{home / 'results.sqlite'}"
    match = _PLAIN_SQLITE.fullmatch(url)
    if match is None:
        return None
    path = Path(match[1]).expanduser()
    return path if path.is_absolute() else (base or Path.cwd()) / path


def absent_store_file(db: str | None, config: Config) -> Path | None:
    """The store's SQLite file when it does not exist yet: no run stored, nothing to compare."""
    path = plain_sqlite_file(db, config)
    return path if path is not None and not path.exists() else None


@cli.group("db")
def db() -> None:
    """The result store (SQLite or PostgreSQL)."""


@db.command("upgrade")
@db_option
@config_option
def upgrade(db: str | None, config_path: str | None) -> None:
    """Create the store's tables or upgrade them to this version (idempotent)."""
    from retrieval_eval.store import Store

    with Store(store_url_for(db, config_path)) as store:
        before = store.revision()
        store.upgrade()
        after = store.revision()
        if before == after:
            click.echo(f"{store.display_url}: schema already at revision {after}")
        else:
            click.echo(f"{store.display_url}: schema upgraded from {before or 'empty'} to {after}")


@db.command("flush")
@db_option
@config_option
@click.option(
    "--spool-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Folder of spooled runs (default: $RETRIEVAL_EVAL_HOME/spool).",
)
def flush(db: str | None, config_path: str | None, spool_dir: Path | None) -> None:
    """Save runs that were spooled while the store was unreachable; exit 3 if it still is (2 if
    a newer retrieval-eval migrated it: upgrade the package, then flush).

    Each run goes into the store it was spooled for (its password taken from the store that
    --db, $RETRIEVAL_EVAL_DB or the config name, when it is the same store); an explicit --db
    puts every run there instead. A run that cannot be saved (a pinned baseline that was
    pruned, a store whose full URL is not known here, an unreadable file) is set aside in
    SPOOL/rejected with a .reason file and exits 2 once the others are saved. While another
    flush of the same folder runs, this one says so and exits 0: that one saves the runs.
    Replays of query samples spooled by `replay` are saved too, each compared with the replay
    of its series before it (or what it was compared with), as when it ran.
    """
    from retrieval_eval.errors import UnknownNameError
    from retrieval_eval.store.spool import FlushBusyError, default_spool_dir
    from retrieval_eval.workflows.recording import flush_spool, later, store_error

    url = store_url_for(db, config_path)
    folder = spool_dir or default_spool_dir()
    try:
        done = flush_spool(url, folder, override=db is not None)
    except FlushBusyError as exc:
        click.echo(str(exc), err=True)
        return
    for path, why in done.left:  # the error below is not repeated for each of its files
        click.echo(
            f"left in place: {path}" + ("" if why == done.unreachable else f": {why}"), err=True
        )
    into = ", ".join(done.stores)
    if done.ids:
        click.echo(
            f"saved {len(done.ids)} spooled run(s) from {folder} into {into}: "
            + ", ".join(str(i) for i in done.ids)
        )
    if done.replays:
        click.echo(
            f"saved {len(done.replays)} spooled replay(s) of query samples from {folder} into "
            f"{into}: " + ", ".join(str(i) for i in done.replays)
        )
    if done.ids or done.replays:
        if done.overridden:
            click.echo(
                f"--db given: {done.overridden} of them had been spooled for another store",
                err=True,
            )
    elif not (done.left or done.set_aside):
        click.echo(f"no spooled runs in {folder}")
    if done.unreachable:
        code = done.unreachable_exit_code
        raise store_error(
            f"{done.unreachable}; its spooled runs stay in {folder}: flush them {later(code)}",
            code,
        )
    if done.set_aside:
        reasons = "\n".join(f"  - {reason} (now {path})" for path, reason in done.set_aside)
        raise UnknownNameError(
            f"{len(done.set_aside)} spooled run(s) could not be saved and were set aside "
            f"in {folder / 'rejected'}:\n{reasons}"
        )


# the old name, from when re-saving spooled runs was called replaying (`replay` replays queries)
old_command(db, "replay", flush, "db flush", said="db replay")


@db.command("url")
@db_option
@config_option
def url(db: str | None, config_path: str | None) -> None:
    """Print the store URL the other commands would use (password masked); never opens it."""
    from retrieval_eval.store import mask_url

    found = store_url_for(db, config_path)
    click.echo(mask_url(found))
    path = plain_sqlite_file(found, None)
    if path is not None and not path.exists():  # stdout stays the URL alone, for scripts
        click.echo("(no store there yet: the first `retrieval-eval run` creates it)", err=True)

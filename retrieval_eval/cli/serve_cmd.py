"""``retrieval-eval serve``: the dashboard on its own, without Airflow, served by uvicorn.

It needs the ``webui`` extra (FastAPI, Jinja2, uvicorn), not the ``airflow`` one. Without a
users file or a trusted proxy header it serves without a login (inside Airflow the plugin
requires an Airflow user), so it listens on 127.0.0.1 unless told otherwise, and says so when it
is told. With a users file (``--users FILE``, or ``$RETRIEVAL_EVAL_HOME/users.yaml`` when it
exists; ``serve users add NAME --role ROLE`` writes it, the password from a prompt or stdin,
never an argument) or ``--trusted-user-header``, every page needs a user of its own login
(:mod:`retrieval_eval.webui.local_auth`): viewers read, raters and admins also grade. The store is looked up as every
reading command looks it up, and only read. Everything is checked before the server starts:
the config, the store URL, the extra, and the address (a port in use is exit 2, naming it).
"""

from __future__ import annotations

import ipaddress
import socket
from pathlib import Path
from typing import TYPE_CHECKING

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.retrievers.extras import pip_command
from retrieval_eval.safety.users import ROLES

if TYPE_CHECKING:
    from retrieval_eval.webui.local_auth import LocalAuth

WEBUI_EXTRA = pip_command("webui")


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _bound(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port`` (uvicorn serves on it); a bad host or a port in use
    is a usage error here, before uvicorn would log it and exit 1 (the regression code)."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
    except socket.gaierror as exc:
        raise InvalidInputError(f"--host {host!r}: not an address here ({exc.strerror})") from None
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        sock.close()
        raise InvalidInputError(
            f"cannot listen on {host}:{port} ({exc.strerror}); another program may use the "
            "port: pick another with --port"
        ) from None
    return sock


@cli.group(invoke_without_command=True)
@db_option
@config_option
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option(
    "--port", type=click.IntRange(1, 65535), default=8000, show_default=True, help="Port."
)
@click.option(
    "--airflow-url",
    metavar="URL",
    default=None,
    help="The Airflow UI a run's DAG run links to (default: the config's airflow.ui_base_url "
    "without /retrieval-eval; none: run keys stay text).",
)
@click.option(
    "--users",
    "users_file",
    metavar="FILE",
    type=click.Path(dir_okay=False),
    default=None,
    help="The users file of the dashboard's own login (default: users.yaml in "
    "$RETRIEVAL_EVAL_HOME, when it exists); `serve users add` writes it.",
)
@click.option(
    "--trusted-user-header",
    metavar="NAME",
    default=None,
    help="Believe this request header (e.g. X-Forwarded-User) as the signed-in user's name, "
    "from the --trusted-proxy addresses only.",
)
@click.option(
    "--trusted-proxy",
    "trusted_proxies",
    metavar="ADDR",
    multiple=True,
    help="An address (or network) of the proxy that sets --trusted-user-header; repeatable "
    "(default: 127.0.0.1 and ::1).",
)
@click.pass_context
def serve(
    ctx: click.Context,
    db: str | None,
    config_path: str | None,
    host: str,
    port: int,
    airflow_url: str | None,
    users_file: str | None,
    trusted_user_header: str | None,
    trusted_proxies: tuple[str, ...],
) -> None:
    """Serve the dashboard at http://HOST:PORT/ without Airflow (Ctrl-C stops it).

    The same pages as Browse -> Retrieval quality inside Airflow, over the store the other
    commands read. With a users file (--users, or users.yaml in $RETRIEVAL_EVAL_HOME) or
    --trusted-user-header, every page needs a signed-in user: viewers read, raters and admins
    also grade the review queue. Without either there is no login: keep it on 127.0.0.1.
    """
    if ctx.invoked_subcommand is not None:
        ctx.obj = {"users_file": users_file}
        return
    local = _local_auth(users_file, trusted_user_header, trusted_proxies)
    from retrieval_eval.config.models import load_config
    from retrieval_eval.reports.links import airflow_url_of
    from retrieval_eval.store import mask_url, resolve_store_url

    config = load_config(config_path)
    url = resolve_store_url(db, config)
    try:
        import uvicorn

        from retrieval_eval.webui.app import create_app
    except ImportError as exc:
        raise InvalidInputError(
            f"the dashboard needs the webui extra ({exc.name} is not installed): {WEBUI_EXTRA}"
        ) from None
    sock = _bound(host, port)
    app = create_app(
        url,
        require_auth=False,
        airflow_url=airflow_url or airflow_url_of(config.airflow.ui_base_url),
        config_path=config_path,
        local_auth=local,
    )
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"dashboard of {mask_url(url)} at http://{shown}:{port}/ (Ctrl-C stops it)", err=True
    )
    if local is not None:
        ways = [f"{len(local.users())} users of {local.users_file}"] if local.users_file else []
        if local.trusted_header:
            ways.append(
                f"the {local.trusted_header} header from {', '.join(map(str, local.trusted_proxies))}"
            )
        click.echo(f"login: {' and '.join(ways)}", err=True)
    elif not _loopback(host):
        click.echo(
            f"warning: no login on {host}: anyone who reaches this port reads the store",
            err=True,
        )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:  # uvicorn shuts down, then raises the Ctrl-C it caught again
        click.echo("dashboard stopped", err=True)
    finally:
        sock.close()
        app.state.store_source.close()


def _users_path(users_file: str | None) -> Path:
    from retrieval_eval.safety.users import default_users_file

    return Path(users_file) if users_file else default_users_file()


def _local_auth(
    users_file: str | None, header: str | None, proxies: tuple[str, ...]
) -> LocalAuth | None:
    """The dashboard's own login, or None (no users file, no trusted header: no login)."""
    path = _users_path(users_file)
    if users_file is None and not path.is_file():
        path = None  # type: ignore[assignment]
    if path is None and header is None:
        if proxies:
            raise InvalidInputError("--trusted-proxy needs --trusted-user-header")
        return None
    if users_file is not None and not path.is_file():
        raise InvalidInputError(
            f"--users {users_file}: no such file: create it with "
            f"`retrieval-eval serve --users {users_file} users add NAME --role rater`"
        )
    try:
        from retrieval_eval.webui.local_auth import LOOPBACK, LocalAuth
    except ImportError as exc:
        raise InvalidInputError(
            f"the dashboard needs the webui extra ({exc.name} is not installed): {WEBUI_EXTRA}"
        ) from None
    for proxy in proxies:
        try:
            ipaddress.ip_network(proxy, strict=False)
        except ValueError:
            raise InvalidInputError(
                f"--trusted-proxy {proxy!r}: not an address or network (e.g. 10.0.0.5, 10.0.0.0/24)"
            ) from None
    return LocalAuth(path, trusted_header=header, trusted_proxies=proxies or LOOPBACK)


@serve.group()
def users() -> None:
    """The users of the dashboard's own login (the file of serve --users)."""


@users.command("add")
@click.argument("name")
@click.option(
    "--role",
    type=click.Choice(ROLES),
    default="rater",
    show_default=True,
    help="viewer: reads; rater: also grades the review queue; admin: as rater.",
)
@click.option(
    "--password-stdin",
    is_flag=True,
    help="Read the password from stdin's first line (for scripts), not from a prompt.",
)
@click.pass_context
def users_add(ctx: click.Context, name: str, role: str, password_stdin: bool) -> None:
    """Add user NAME to the users file, or change their role and password.

    The password is asked for twice (or read from stdin with --password-stdin), never taken
    as an argument; the file keeps its scrypt hash only, readable by its owner alone.
    """
    import sys

    from retrieval_eval.safety.users import (
        MIN_PASSWORD,
        User,
        check_name,
        hash_password,
        read_users,
        write_users,
    )

    path = _users_path((ctx.obj or {}).get("users_file"))
    check_name(name)
    found = read_users(path)  # a bad file is refused before anything is asked
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt(
            f"password for {name}", hide_input=True, confirmation_prompt=True, err=True
        )
    if len(password) < MIN_PASSWORD:
        raise InvalidInputError(f"the password must have {MIN_PASSWORD} characters or more")
    changed = name in found
    found[name] = User(name, role, hash_password(password))  # type: ignore[arg-type]
    write_users(path, found)
    click.echo(f"{'updated' if changed else 'added'} {name} ({role}) in {path}", err=True)

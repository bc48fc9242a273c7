"""``retrieval-eval serve``: the dashboard on its own, without Airflow, served by uvicorn.

It needs the ``webui`` extra (FastAPI, Jinja2, uvicorn), not the ``airflow`` one. It serves
without a login (inside Airflow the plugin requires an Airflow user), so it listens on
127.0.0.1 unless told otherwise, and says so when it is told. The store is looked up as every
reading command looks it up, and only read. Everything is checked before the server starts:
the config, the store URL, the extra, and the address (a port in use is exit 2, naming it).
"""

from __future__ import annotations

import ipaddress
import socket

import click

from retrieval_eval.cli import cli
from retrieval_eval.cli.db_cmd import db_option
from retrieval_eval.cli.options import config_option
from retrieval_eval.errors import InvalidInputError
from retrieval_eval.retrievers.extras import pip_command

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


@cli.command()
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
def serve(
    db: str | None, config_path: str | None, host: str, port: int, airflow_url: str | None
) -> None:
    """Serve the dashboard at http://HOST:PORT/ without Airflow (Ctrl-C stops it).

    The same pages as Browse -> Retrieval quality inside Airflow, over the store the other
    commands read, without a login: keep it on 127.0.0.1, or behind your own proxy.
    """
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
    )
    shown = f"[{host}]" if ":" in host else host
    click.echo(
        f"dashboard of {mask_url(url)} at http://{shown}:{port}/ (Ctrl-C stops it)", err=True
    )
    if not _loopback(host):
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

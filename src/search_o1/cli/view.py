"""`search-o1 view RUN_DIR`: browse an evaluation run in the web page."""

from __future__ import annotations

from pathlib import Path

import click

from search_o1.cli.serve import bind, browser_hosts, check_exposure, require_serve_extra


@click.command("view")
@click.argument("run_dir", type=click.Path(path_type=Path))
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to bind.")
@click.option("--port", default=8001, show_default=True, type=int, help="Port to bind.")
@click.option("--insecure", is_flag=True, help="Allow a non-loopback --host (no auth here).")
@click.option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    help="Another Host name to answer to (repeatable; '*' for any).",
)
@click.option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    help="A page origin allowed to read the run (repeatable).",
)
def command(
    run_dir: Path,
    host: str,
    port: int,
    insecure: bool,
    allowed_hosts: tuple[str, ...],
    cors_origins: tuple[str, ...],
) -> None:
    """Show an evaluation run: items with scores and finish reasons, and each full trace."""
    require_serve_extra()
    check_exposure(host, has_key=False, insecure=insecure)
    import uvicorn

    from search_o1.serve.view import check_run_dir, create_view_app

    check_run_dir(run_dir)
    # Bound before the address is announced: a port in use is one line, as for serve.
    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{sock.getsockname()[1]}/"
    click.echo(f"search-o1: viewing {run_dir} on {where}", err=True)
    app = create_view_app(
        run_dir, hosts=browser_hosts(host, allowed_hosts), cors_origins=cors_origins
    )
    with sock:
        uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])

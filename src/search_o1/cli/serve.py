"""`search-o1 serve`: the pipeline behind an OpenAI-compatible API, /retrieve, MCP at /mcp
and a web page."""

from __future__ import annotations

import ipaddress
import os
import socket
from pathlib import Path
from typing import Any

import click

from search_o1.cli.demo import demo_flags, demo_settings
from search_o1.cli.options import GroupedCommand, option, setting_options, settings_from_flags
from search_o1.config import Settings
from search_o1.errors import ConfigError, MissingExtraError, SearchO1Error

GRACEFUL_SHUTDOWN_S = 30  # in-flight runs get this long to finish on Ctrl-C / SIGTERM
# New tokens for the chain of a request that sends no max_tokens, on the embedded model:
# SmolLM2-135M on a CPU rarely writes anything useful past this, and filling its whole
# 8,192-token window takes minutes. Other backends keep the settings' limits.
EMBEDDED_DEFAULT_MAX_TOKENS = 512


def default_max_tokens(settings: Settings) -> int | None:
    """A request's chain budget when it gives none (None: the settings' limits).

    >>> from search_o1.config import load_settings
    >>> default_max_tokens(load_settings({}, environ={}))
    512
    >>> default_max_tokens(load_settings({"max_total_tokens": 2000}, environ={})) is None
    True
    """
    if settings.llm_backend != "embedded" or settings.max_total_tokens is not None:
        return None
    return EMBEDDED_DEFAULT_MAX_TOKENS


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server private to this machine.

    >>> [is_loopback(h) for h in ("127.0.0.1", "localhost", "::1", "0.0.0.0", "example.org")]
    [True, True, True, False, False]
    """
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name could resolve anywhere: treat it as public


def check_exposure(host: str, *, has_key: bool, insecure: bool) -> None:
    """Refuse to open the API beyond this machine without a key, unless told to."""
    if not is_loopback(host) and not has_key and not insecure:
        raise ConfigError(
            f"refusing to serve on {host} without an API key: set --auth-key-env NAME "
            "(clients send Authorization: Bearer $NAME), or pass --insecure"
        )


def require_serve_extra() -> None:
    try:
        import starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(e.name or "starlette", "serve") from None


def _auth_key(env_name: str | None) -> str | None:
    if env_name is None:
        return None
    key = os.environ.get(env_name, "").strip()
    if not key:
        raise ConfigError(f"--auth-key-env {env_name}: that environment variable is empty")
    return key


@click.command("serve", cls=GroupedCommand)
@option("--host", default="127.0.0.1", group="server", help="Address to bind.")
@option("--port", default=8000, type=int, group="server", help="Port to bind.")
@option(
    "--auth-key-env",
    metavar="NAME",
    group="server",
    help="Environment variable holding the bearer key clients must send "
    "(--api-key-env is the model server's key).",
)
@option("--insecure", is_flag=True, group="server", help="Allow a non-loopback --host, no key.")
@option(
    "--max-concurrency",
    type=int,
    group="server",
    show_default="--concurrency",
    help="Questions run at once.",
)
@option("--max-queue", type=int, default=16, group="server", help="Requests waiting; more: 429.")
@option("--model-name", default="search-o1", group="server", help="Name in /v1/models.")
@option(
    "--allowed-host",
    "allowed_hosts",
    multiple=True,
    metavar="NAME",
    group="server",
    help="Another Host name to answer to (repeatable; '*' for any, behind a proxy that checks).",
)
@option(
    "--cors-origin",
    "cors_origins",
    multiple=True,
    metavar="ORIGIN",
    group="server",
    help="A page origin (https://app.example) allowed to call the API and /mcp (repeatable).",
)
@option("--demo", is_flag=True, help="Use the demo setup (embedded model, demo corpus).")
@setting_options
def command(
    host: str,
    port: int,
    auth_key_env: str | None,
    insecure: bool,
    max_concurrency: int | None,
    max_queue: int,
    model_name: str,
    allowed_hosts: tuple[str, ...],
    cors_origins: tuple[str, ...],
    demo: bool,
    config_file: Path | None,
    **flags: Any,
) -> None:
    """Serve the pipeline: /v1/chat/completions, /retrieve, /mcp, /health, and a page at /.

    Each request is logged on stderr as it ends. On the embedded model a request
    without max_tokens gets 512 new tokens (stated in /v1/models)."""
    require_serve_extra()
    key = _auth_key(auth_key_env)
    check_exposure(host, has_key=key is not None, insecure=insecure)
    if demo:
        flags = demo_flags(flags)
    settings = settings_from_flags(config_file, flags)
    if demo:
        settings = demo_settings(settings)
    _check_corpus(settings.corpus)
    _serve(
        settings,
        host,
        port,
        api_key=key,
        max_queue=max_queue,
        model_name=model_name,
        max_concurrency=max_concurrency or settings.concurrency,
        hosts=browser_hosts(host, allowed_hosts),
        cors_origins=cors_origins,
    )


def _check_corpus(corpus: str | None) -> None:
    if corpus is not None and not Path(corpus).exists():
        raise ConfigError(f"--corpus {corpus}: no such file or folder")


def browser_hosts(host: str, allowed: tuple[str, ...]) -> frozenset[str]:
    """The Host names to answer to: those of the bind address, plus --allowed-host."""
    from search_o1.serve.guard import host_names

    return host_names(host, allowed)


def bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before anything is announced (a port in use: one line)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as e:
        sock.close()
        raise ConfigError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None
    return sock


def _serve(settings: Settings, host: str, port: int, **app_options: Any) -> None:
    import uvicorn

    from search_o1.serve.app import ServeHooks, create_app

    sock = bind(host, port)
    shown = f"[{host}]" if ":" in host else host
    where = f"http://{shown}:{sock.getsockname()[1]}/"
    failed: list[SearchO1Error] = []
    server: list[uvicorn.Server] = []

    def ready() -> None:
        click.echo(f"search-o1: serving {app_options['model_name']!r} on {where}", err=True)

    def startup_failed(error: SearchO1Error) -> None:
        failed.append(error)
        server[0].should_exit = True  # stop before serving; the error is printed below

    def stopped() -> None:  # from the app: uvicorn re-raises a caught SIGTERM after it
        click.echo("search-o1: stopped", err=True)

    def request_done(line: str) -> None:
        click.echo(f"search-o1: {line}", err=True)

    hooks = ServeHooks(
        on_ready=ready,
        on_startup_error=startup_failed,
        on_stopped=stopped,
        on_request=request_done,
    )
    budget = default_max_tokens(settings)
    app = create_app(settings, hooks=hooks, default_max_tokens=budget, **app_options)
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=GRACEFUL_SHUTDOWN_S)
    server.append(uvicorn.Server(config))
    with sock:
        server[0].run(sockets=[sock])
    if failed:
        raise failed[0]

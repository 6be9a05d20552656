"""`search-o1 mcp`: the pipeline as an MCP server over stdio (ask, search, retrieve)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from search_o1.cli.demo import DEMO_HINT, demo_flags, demo_settings
from search_o1.cli.options import GroupedCommand, option, setting_options, settings_from_flags
from search_o1.errors import ConfigError, MissingExtraError


def require_mcp_extra() -> None:
    try:
        import mcp  # noqa: F401
    except ImportError as e:
        raise MissingExtraError(e.name or "mcp", "mcp") from None


@click.command("mcp", cls=GroupedCommand)
@option("--demo", is_flag=True, help=f"Use the demo setup ({DEMO_HINT}).")
@setting_options
def command(demo: bool, config_file: Path | None, **flags: Any) -> None:
    """Serve ask, search and retrieve to an agent over MCP (stdio).

    An agent or editor starts this command and talks to it on stdin/stdout; see the
    README for the configuration snippet. `search-o1 serve` offers the same tools over
    HTTP at /mcp.
    """
    require_mcp_extra()
    if demo:
        flags = demo_flags(flags)
    settings = settings_from_flags(config_file, flags)
    if demo:
        settings = demo_settings(settings)
    if settings.corpus is not None and not Path(settings.corpus).exists():
        raise ConfigError(f"--corpus {settings.corpus}: no such file or folder")
    from search_o1.mcp.server import run_stdio

    run_stdio(settings)

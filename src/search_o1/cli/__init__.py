"""The `search-o1` command: a thin shell that parses, builds settings, calls the library.

Each subcommand lives in its own module exposing `command` (a click command or group).
Errors the library raises on purpose (SearchO1Error) print as one line and exit 2.
"""

from __future__ import annotations

import errno
import importlib
import logging
import signal
import sys

import click

from search_o1.errors import SearchO1Error
from search_o1.text_safety import terminal_text

# Subcommand modules, in the order `--help` lists them.
_SUBCOMMANDS = ("ask", "index", "eval", "reproduce", "report", "cache", "serve", "mcp", "view")
_RESUMABLE = frozenset({"eval", "reproduce"})
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class _Group(click.Group):
    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except SearchO1Error as e:
            # The message may quote a server or a file: no terminal control codes in it.
            click.echo(f"error: {terminal_text(str(e))}", err=True)
            sys.exit(2)
        except OSError as e:
            # A full disk wherever a command writes (an index, an export): one line, as
            # eval says it for its run files; any other OSError is a bug to see whole.
            if e.errno not in _DISK_FULL:
                raise
            where = f" writing {e.filename}" if e.filename else ""
            click.echo(
                f"error: the disk is full{where} ({e.strerror}); free space and rerun", err=True
            )
            sys.exit(2)
        except KeyboardInterrupt as e:
            # 128 + the signal, as shells report it (SIGINT, or SIGTERM handled the same
            # way); an eval keeps every finished item.
            resume = ctx.invoked_subcommand in _RESUMABLE
            what = "terminated" if getattr(e, "signum", None) == signal.SIGTERM else "interrupted"
            click.echo(f"{what}{'; rerun the same command to resume' if resume else ''}", err=True)
            sys.exit(128 + getattr(e, "signum", signal.SIGINT))


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="search-o1")
def cli() -> None:
    """Search-o1: a reasoning model that searches in the middle of its thinking.

    Settings come from search-o1.toml, then SEARCH_O1_* environment variables, then flags.
    """


for _name in _SUBCOMMANDS:
    try:
        _mod = importlib.import_module(f"search_o1.cli.{_name}")
    except ModuleNotFoundError as _e:
        if _e.name != f"search_o1.cli.{_name}":
            raise
        continue
    cli.add_command(_mod.command)


class _LevelPrefix(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return f"{record.levelname.lower()}: {record.getMessage()}"


def _library_warnings_as_lines() -> None:
    """The library's warnings (a server quirk, a fallback taken) as the CLI's own lines,
    `warning: ...` on stderr, like the ones the commands print; they came bare, and
    mixed into serve's request log."""
    handler = logging.StreamHandler()
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_LevelPrefix())
    logging.getLogger("search_o1").addHandler(handler)


def main() -> None:
    _library_warnings_as_lines()
    cli()

"""Flags derived from the Settings fields, grouped --help, and the merge into Settings.

Each Settings field becomes one flag, `--field-name` (see the top of config.py): its
description is the help, its default is shown, its group places it in --help. Every
derived flag defaults to None ("not given") so search-o1.toml and SEARCH_O1_* values show
through; the option's `dest` is the field name.
"""

from __future__ import annotations

import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal, TypeVar, Union, get_args, get_origin

import click
from pydantic.fields import FieldInfo

from search_o1.config import GROUPS, Settings, load_settings

F = TypeVar("F", bound=Callable[..., Any])

# Section titles of --help; a command's own options without a group come first.
_TITLES = {
    "general": "Options",
    "run": "Run",
    "output": "Output",
    "server": "Server",
    "model": "Model",
    "reader": "Reader (Reason-in-Documents)",
    "search": "Search",
    "dense": "Dense search",
    "limits": "Limits",
    "sampling": "Sampling",
    "fetch": "Web fetch",
    "cache": "Cache",
    "scheduling": "Scheduling",
}
_COMMAND_GROUPS = ("general", "run", "output", "server")


class GroupedOption(click.Option):
    """A click option that knows which --help section it belongs to."""

    def __init__(self, *args: Any, group: str = "general", **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group


class GroupedCommand(click.Command):
    """A command whose --help lists options by section (as vLLM does), defaults shown."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("context_settings", {}).setdefault("show_default", True)
        super().__init__(*args, **kwargs)

    def format_options(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        sections: dict[str, list[tuple[str, str]]] = {}
        for param in self.get_params(ctx):
            record = param.get_help_record(ctx) if isinstance(param, click.Option) else None
            if record is not None:
                sections.setdefault(getattr(param, "group", "general"), []).append(record)
        order = [*_COMMAND_GROUPS, *GROUPS]
        for name in sorted(sections, key=lambda g: order.index(g) if g in order else len(order)):
            with formatter.section(_TITLES.get(name, name.capitalize())):
                formatter.write_dl(sections[name])


def option(*decls: str, group: str = "general", **kwargs: Any) -> Callable[[F], F]:
    """`click.option` placed in a --help section."""
    return click.option(*decls, cls=GroupedOption, group=group, **kwargs)


def _base_type(annotation: Any) -> Any:
    """The annotation without `| None`."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        return args[0] if len(args) == 1 else str
    return annotation


def _shown_default(field: FieldInfo) -> str:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    if "shown" in extra:
        return str(extra["shown"])
    value = field.get_default(call_default_factory=True)
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list):
        return ",".join(str(v) for v in value) or "none"
    return "none" if value is None else str(value)


def _setting_option(name: str, field: FieldInfo) -> Callable[[F], F]:
    extra = field.json_schema_extra if isinstance(field.json_schema_extra, dict) else {}
    group = str(extra.get("group", "other"))
    flag = "--" + name.replace("_", "-")
    help_text = f"{field.description or ''}  [default: {_shown_default(field)}]".strip()
    kind = _base_type(field.annotation)
    kw: dict[str, Any] = {"default": None, "show_default": False, "help": help_text}
    if kind is bool:
        return option(f"{flag}/--no-{flag[2:]}", name, group=group, **kw)
    if get_origin(kind) is Literal:
        kw["type"] = click.Choice([str(a) for a in get_args(kind)])
    elif get_origin(kind) is list:
        kw.update(multiple=True, default=())
    elif kind in (int, float):
        kw["type"] = kind
    return option(flag, name, group=group, **kw)


def setting_options(func: F) -> F:
    """Add `--config` and one flag per Settings field to a click command."""
    decorators = [
        option(
            "--config",
            "config_file",
            type=click.Path(path_type=Path),
            help="Settings file.",
            show_default="./search-o1.toml if present",
        ),
        *(_setting_option(n, f) for n, f in Settings.model_fields.items()),
    ]
    for decorate in reversed(decorators):
        func = decorate(func)
    return func


# The old name: commands and plugins decorated with it keep working.
backend_options = setting_options


def settings_from_flags(config_file: Path | None, flags: dict[str, Any]) -> Settings:
    """Settings from file < env < the given flags (None and empty tuples = not given).

    An unknown SEARCH_O1_* variable prints one warning line on stderr.
    """
    given = {k: v for k, v in flags.items() if v is not None and v != ()}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        settings = load_settings(given, config_file=config_file)
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    return settings


def replay_note(settings: Settings) -> None:
    """After a run: replay serves the recorded searches and pages, but the model repeats
    its chain only if it samples the same way, which takes the recorded run's seed."""
    if settings.cache == "replay" and settings.seed is None:
        click.echo(
            "note: --cache replay repeats a run only with that run's --seed; none was set",
            err=True,
        )

"""Where settings are read from besides code: the TOML file and the SEARCH_O1_* environment.

Apart from config.py, which declares the settings: this module is given the names of the
settings rather than importing them, so config.py builds on it and nothing points back.
"""

from __future__ import annotations

import difflib
import tomllib
from collections.abc import Collection, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic_settings import BaseSettings, EnvSettingsSource

from search_o1.errors import ConfigError

CONFIG_FILE = "search-o1.toml"
ENV_PREFIX = "SEARCH_O1_"

# SEARCH_O1_* variables that are not settings but are read elsewhere on purpose; any other
# variable with our prefix is reported as unknown (it is usually a misspelt setting).
OTHER_ENV: frozenset[str] = frozenset({"SEARCH_O1_DATA_DIR", "SEARCH_O1_INDEX_CACHE"})


@dataclass(frozen=True)
class Inputs:
    environ: Mapping[str, str]
    file_values: dict[str, Any]


# What `load_settings` hands to the sources for one construction (a ContextVar because
# pydantic-settings builds sources in a classmethod, with no per-call argument).
LOADING: ContextVar[Inputs | None] = ContextVar("search_o1_settings_inputs", default=None)


class EnvSource(EnvSettingsSource):
    """pydantic-settings' environment source over a given mapping (tests pass their own)."""

    def __init__(self, settings_cls: type[BaseSettings], environ: Mapping[str, str]) -> None:
        self._environ = environ
        super().__init__(settings_cls)

    # The hook pydantic-settings' own .env source overrides to read from elsewhere.
    def _load_env_vars(self) -> Mapping[str, str | None]:
        return {k.lower(): v for k, v in self._environ.items()}


# Settings that changed name, so an old file or variable gets the new name, not a guess.
RENAMED = {
    "max_tokens": "max_call_tokens (per call; max_total_tokens is per question)",
    "reader_max_tokens": "reader_max_call_tokens",
}


def did_you_mean(name: str, names: Collection[str]) -> str:
    """A hint for an unknown setting name: its new name, or the closest known one.

    >>> did_you_mean("max_tokens", ["max_call_tokens", "max_total_tokens"])
    ' (renamed: max_call_tokens (per call; max_total_tokens is per question))'
    >>> did_you_mean("top_kk", ["top_k", "timeout"])
    " (did you mean 'top_k'?)"
    """
    if name in RENAMED:
        return f" (renamed: {RENAMED[name]})"
    close = difflib.get_close_matches(name, list(names), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_env_lines(environ: Mapping[str, str], names: Collection[str]) -> list[str]:
    """Lines for SEARCH_O1_* variables that are not among `names` (nor OTHER_ENV)."""
    out = []
    for key in sorted(environ):
        upper = key.upper()
        if not upper.startswith(ENV_PREFIX) or upper in OTHER_ENV:
            continue
        name = upper[len(ENV_PREFIX) :].lower()
        if name not in names:
            out.append(f"unknown environment variable {key}, ignored{did_you_mean(name, names)}")
    return out


def file_values(path: Path | None, names: Collection[str]) -> dict[str, Any]:
    """The settings in a TOML file (none given: ./search-o1.toml if there is one)."""
    if path is None:
        path = Path(CONFIG_FILE)
        if not path.is_file():
            return {}
    if path.is_dir():
        raise ConfigError(f"config file {path} is a folder; pass a .toml file")
    try:
        with path.open("rb") as f:
            data = tomllib.load(f)
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {path}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise ConfigError(f"{path}: invalid TOML: {e}") from None
    except OSError as e:
        raise ConfigError(f"config file {path}: {e.strerror or e}") from None
    values = {k.replace("-", "_"): v for k, v in data.items()}
    for key in values:
        if key not in names:
            raise ConfigError(f"{path}: unknown setting {key!r}{did_you_mean(key, names)}")
    return values

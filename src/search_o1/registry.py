"""Backends by short name: typed factories found through entry points, as plugins are.

A model backend is an `LLMFactory` (`(settings, *, role) -> LLM`), a search backend a
`SearchFactory` (`(settings) -> Search`). Both take the run's `Settings` explicitly and
read from it what they need.

Where a name is looked up, first to last:
1. `register(kind, name, factory)`: in-process registrations (tests, notebooks);
2. `BUILTINS` for a built-in name: a built-in name is ours, so a plugin cannot silently
   replace `openai` or `bm25` (register() can, on purpose), and the table is the code's
   own word when installed metadata is stale (an editable install made before a
   backend was added or moved, `PYTHONPATH=src`, a vendored copy), which would
   otherwise fail with "unknown search backend 'bm25'" or an import error that says
   nothing about its cause;
3. entry points in the groups `search_o1.llm` and `search_o1.search`: a third-party
   package declares its backends there, as our pyproject.toml declares the built-ins
   (a test checks that this table and pyproject.toml agree).

Factories are loaded lazily (a dotted path), so a missing optional extra only matters
when that backend is chosen.
"""

from __future__ import annotations

import importlib
from importlib.metadata import EntryPoint, entry_points
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias, overload

from search_o1.errors import ConfigError

if TYPE_CHECKING:
    from search_o1.config import Settings
    from search_o1.llm.base import LLM
    from search_o1.search.base import Search

__all__ = [
    "BUILTINS",
    "Kind",
    "LLMFactory",
    "Role",
    "SearchFactory",
    "names",
    "register",
    "resolve_llm",
    "resolve_search",
    "unregister",
]

Kind = Literal["llm", "search"]
Role = Literal["main", "reader"]
DIST = "search-o1"


class LLMFactory(Protocol):
    """Builds a model backend for `role` ("main", or "reader" for Reason-in-Documents)."""

    def __call__(self, settings: Settings, *, role: Role = "main") -> LLM: ...


class SearchFactory(Protocol):
    """Builds a search backend from the run's settings."""

    def __call__(self, settings: Settings) -> Search: ...


Factory: TypeAlias = LLMFactory | SearchFactory

# name -> "module:attribute"; must equal pyproject.toml's entry points (a test checks).
BUILTINS: dict[Kind, dict[str, str]] = {
    "llm": {
        "openai": "search_o1.wiring.llms:openai",
        "embedded": "search_o1.wiring.llms:embedded",
    },
    "search": {
        "bm25": "search_o1.wiring.searches:bm25",
        "dense": "search_o1.wiring.searches:dense",
        "memory": "search_o1.wiring.searches:memory",
        "serper": "search_o1.wiring.searches:serper",
        "brave": "search_o1.wiring.searches:brave",
        "tavily": "search_o1.wiring.searches:tavily",
        "bing": "search_o1.wiring.searches:bing",
        "searxng": "search_o1.wiring.searches:searxng",
        "duckduckgo": "search_o1.wiring.searches:duckduckgo",
        "retriever": "search_o1.wiring.searches:retriever",
        "mcp": "search_o1.wiring.searches:mcp",
    },
}

_registered: dict[Kind, dict[str, Factory]] = {"llm": {}, "search": {}}


@overload
def register(kind: Literal["llm"], name: str, factory: LLMFactory) -> None: ...
@overload
def register(kind: Literal["search"], name: str, factory: SearchFactory) -> None: ...
def register(kind: Kind, name: str, factory: Factory) -> None:
    """Make `factory` the backend `name` of `kind` in this process (over any other)."""
    _check_kind(kind)
    _registered[kind][name] = factory


def unregister(kind: Kind, name: str) -> None:
    """Undo `register` (a no-op for a name that was not registered)."""
    _check_kind(kind)
    _registered[kind].pop(name, None)


def resolve_llm(name: str) -> LLMFactory:
    """The factory of model backend `name`; ConfigError lists the known names."""
    found = _registered["llm"].get(name) or _load_factory("llm", name)
    return found  # type: ignore[return-value]


def resolve_search(name: str) -> SearchFactory:
    """The factory of search backend `name`; ConfigError lists the known names."""
    found = _registered["search"].get(name) or _load_factory("search", name)
    return found  # type: ignore[return-value]


def names(kind: Kind) -> list[str]:
    """Every backend name of `kind`: registered, plugin and built-in."""
    _check_kind(kind)
    eps = (ep.name for ep in _entry_points(kind))
    return sorted({*_registered[kind], *eps, *BUILTINS[kind]})


def _check_kind(kind: str) -> None:
    if kind not in BUILTINS:
        raise ValueError(f"backend kind must be 'llm' or 'search', not {kind!r}")


def _entry_points(kind: Kind) -> list[EntryPoint]:
    return list(entry_points(group=f"search_o1.{kind}"))


def _pick(kind: Kind, name: str) -> EntryPoint | None:
    """The entry point for `name`; for a built-in name, only our own distribution's."""
    found = [ep for ep in _entry_points(kind) if ep.name == name]
    if name in BUILTINS[kind]:
        found = [ep for ep in found if ep.dist is None or ep.dist.name == DIST]
    return found[0] if found else None


def _load_factory(kind: Kind, name: str) -> Factory:
    _check_kind(kind)
    if name in BUILTINS[kind]:
        # Ours: the table is the code's own word (installed metadata may predate a move).
        return _load_path(BUILTINS[kind][name])
    ep = _pick(kind, name)
    if ep is not None:
        loaded: Factory = ep.load()
        return loaded
    raise ConfigError(f"unknown {kind} backend {name!r}; known: {', '.join(names(kind))}")


def _load_path(path: str) -> Factory:
    module, _, attr = path.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise ConfigError(f"backend factory {path} is not callable")
    return obj  # its signature is what the table promises

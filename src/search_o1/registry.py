"""Backends by short name: a plain dict, plus entry points so plugins register the same way.

Built-ins register lazily (a dotted path), so a missing optional extra only matters when
that backend is chosen. Third-party packages add entry points in the groups
`search_o1.llm` and `search_o1.search`, pointing at a factory.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from search_o1.errors import ConfigError

# name -> "module:factory". A factory takes keyword settings and returns a backend.
SEARCH_BACKENDS: dict[str, str] = {
    "bm25": "search_o1.corpus.bm25:BM25Search.from_settings",
    "memory": "search_o1.search.memory:MemorySearch",
    "serper": "search_o1.search.serper:SerperSearch.from_settings",
    "brave": "search_o1.search.brave:BraveSearch.from_settings",
    "tavily": "search_o1.search.tavily:TavilySearch.from_settings",
    "bing": "search_o1.search.bing:BingSearch.from_settings",
    "searxng": "search_o1.search.searxng:SearxngSearch.from_settings",
    "duckduckgo": "search_o1.search.duckduckgo:DuckDuckGoSearch.from_settings",
    "retriever": "search_o1.search.retriever:RetrieverSearch.from_settings",
}
LLM_BACKENDS: dict[str, str] = {
    "openai": "search_o1.llm.openai:OpenAILLM.from_settings",
    "embedded": "search_o1.llm.embedded:EmbeddedLLM.from_settings",
}


def _load(path: str) -> Callable[..., Any]:
    module, _, attr = path.partition(":")
    obj: Any = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj  # type: ignore[no-any-return]


def resolve(kind: str, name: str) -> Callable[..., Any]:
    """The factory for backend `name` of `kind` ("llm" or "search")."""
    table = LLM_BACKENDS if kind == "llm" else SEARCH_BACKENDS
    if name in table:
        return _load(table[name])
    for ep in entry_points(group=f"search_o1.{kind}"):
        if ep.name == name:
            return ep.load()  # type: ignore[no-any-return]
    raise ConfigError(f"unknown {kind} backend {name!r}; known: {', '.join(names(kind))}")


def names(kind: str) -> list[str]:
    """Every backend name of `kind`, built-in and plugin."""
    table = LLM_BACKENDS if kind == "llm" else SEARCH_BACKENDS
    return sorted({*table, *(ep.name for ep in entry_points(group=f"search_o1.{kind}"))})

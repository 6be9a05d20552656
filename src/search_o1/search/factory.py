"""Build the search backend a run's settings ask for.

Each named backend comes from the registry; web backends (those with a
`cache_identity()`) are wrapped with the cache passed in (none: uncached), each on its
own, before fusion, so a fused run's entries are shared with single-backend runs.
Several names are fused by reciprocal rank. The caller owns the cache and closes it
(`open_pipeline` does); the returned backend's `aclose` never closes it.
"""

from __future__ import annotations

from collections.abc import Callable

from search_o1.cache import Cache
from search_o1.config import Settings
from search_o1.registry import resolve_search
from search_o1.search.base import Search
from search_o1.search.cached import Cacheable, CachedSearch

__all__ = ["build_search"]


def build_search(
    settings: Settings, *, cache: Cache | Callable[[], Cache | None] | None = None
) -> Search:
    """One backend by name; several (`--search bm25,serper`) are fused by rank.

    Web backends go through `cache`: an open Cache, or a callable that opens it, called
    only when a web backend is built (so a corpus-only run creates no cache file).
    The caller owns the result: `await search.aclose()` when done (open_pipeline does).
    """
    backends: list[Search] = []
    for name in settings.search:
        backend = resolve_search(name)(settings)
        if isinstance(backend, Cacheable):
            store = cache() if callable(cache) else cache
            if store is not None:
                backend = CachedSearch(backend, store)
        backends.append(backend)
    if len(backends) == 1:
        return backends[0]
    from search_o1.search.fusion import FusedSearch

    return FusedSearch(backends)

"""Build the search backend a run's settings ask for.

Each named backend comes from the registry; web backends (those with a
`cache_identity()`) are wrapped with the process-wide cache from `open_cache(settings)`
(unless `cache = "off"`), each on its own, before fusion, so a fused run's entries are
shared with single-backend runs. Several names are fused by reciprocal rank.
"""

from __future__ import annotations

from search_o1.cache import open_cache
from search_o1.config import Settings
from search_o1.registry import resolve
from search_o1.search.base import Search
from search_o1.search.cached import Cacheable, CachedSearch


def build_search(settings: Settings) -> Search:
    """One backend by name; several (`--search bm25,serper`) are fused by rank."""
    backends: list[Search] = []
    for name in settings.search:
        backend: Search = resolve("search", name)(settings)
        # Opened only for web backends, so a corpus-only run leaves no cache file behind.
        cache = open_cache(settings) if isinstance(backend, Cacheable) else None
        if cache is not None:
            backend = CachedSearch(backend, cache)
        backends.append(backend)
    if len(backends) == 1:
        return backends[0]
    from search_o1.search.fusion import FusedSearch

    return FusedSearch(backends)

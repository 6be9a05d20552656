"""A search backend behind the shared cache (record: read then write; replay: read only).

Only backends that describe what changes their results (`cache_identity()`) are cached;
local corpus backends are deterministic and cheap, so they are left as they are.
Failures propagate and are never stored.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

from search_o1.cache import Cache
from search_o1.search.base import Search
from search_o1.types import Hit

__all__ = ["Cacheable", "CachedSearch"]


@runtime_checkable
class Cacheable(Protocol):
    def cache_identity(self) -> dict[str, Any]: ...


def _hit_from(data: dict[str, Any]) -> Hit:
    names = {f.name for f in dataclasses.fields(Hit)}
    return Hit(**{k: v for k, v in data.items() if k in names})


class CachedSearch:
    def __init__(self, inner: Search, cache: Cache) -> None:
        self.inner = inner
        self.cache = cache
        self.name = inner.name
        identity = inner.cache_identity() if isinstance(inner, Cacheable) else {}
        self._identity = {"backend": inner.name, **identity}

    async def search(self, query: str, *, k: int) -> list[Hit]:
        meta = {**self._identity, "k": k, "query": query}
        cached = self.cache.get("search", meta, query)  # replay: raises on a miss
        if cached is not None:
            return [_hit_from(h) for h in cached]
        hits = await self.inner.search(query, k=k)
        self.cache.put("search", meta, query, [dataclasses.asdict(h) for h in hits])
        return hits

    async def aclose(self) -> None:
        await self.inner.aclose()

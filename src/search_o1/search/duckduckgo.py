"""DuckDuckGo (keyless) through the `ddgs` package, run in a worker thread.

There is no endpoint to point at a local server, so tests cover the result mapping
(`hits_from_rows`); the call itself is a thin wrapper.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from typing import Any

from search_o1.errors import BackendError, MissingExtraError
from search_o1.search.http import RateLimiter, clean_snippet
from search_o1.types import Hit


def hits_from_rows(rows: Iterable[Mapping[str, Any]], source: str = "duckduckgo") -> list[Hit]:
    """ddgs text results ({title, href, body}) -> hits; rows without a link are skipped."""
    return [
        Hit(
            id=str(r["href"]),
            title=clean_snippet(r.get("title")),
            url=str(r["href"]),
            snippet=clean_snippet(r.get("body")),
            source=source,
        )
        for r in rows
        if r.get("href")
    ]


class DuckDuckGoSearch:
    name = "duckduckgo"

    def __init__(self, *, region: str = "us-en", timeout_s: float = 20.0) -> None:
        try:
            import ddgs  # noqa: F401
        except ImportError:
            raise MissingExtraError("ddgs", "web") from None
        self.region = region
        self.timeout_s = timeout_s
        self._limiter = RateLimiter(1.0)  # DuckDuckGo blocks bursts quickly

    def cache_identity(self) -> dict[str, Any]:
        return {"backend": self.name, "region": self.region}

    def _run(self, query: str, k: int) -> list[dict[str, Any]]:
        from ddgs import DDGS
        from ddgs.exceptions import DDGSException

        try:
            rows = DDGS(timeout=int(self.timeout_s)).text(query, region=self.region, max_results=k)
        except DDGSException as e:
            # ddgs also raises this for "no results"; its message says which.
            if "no results" in str(e).lower():
                return []
            raise BackendError(self.name, f"{type(e).__name__}: {e}", retryable=True) from None
        return list(rows)

    async def search(self, query: str, *, k: int) -> list[Hit]:
        await self._limiter.wait()
        rows = await asyncio.to_thread(self._run, query, k)
        return hits_from_rows(rows, self.name)[:k]

    async def aclose(self) -> None:
        return None

"""Bing Web Search v7 (the paper's engine): GET ?q=&count=&mkt= with
Ocp-Apim-Subscription-Key; `webPages.value[]` comes back (absent when nothing matched)."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import HTTPSearch, Request, clean_snippet
from search_o1.types import Hit

MAX_COUNT = 50  # Bing's documented maximum for `count`


class BingSearch(HTTPSearch):
    name = "bing"
    default_endpoint = "https://api.bing.microsoft.com/v7.0/search"
    key_env = "BING_API_KEY"
    rate_per_s: ClassVar[float | None] = 3.0  # the S1 tier's limit
    market = "en-US"

    def build_request(self, query: str, k: int) -> Request:
        # Unlike the paper's script we pass `count`, so top-k above 10 takes effect.
        params = {"q": query, "count": min(k, MAX_COUNT), "mkt": self.market, "setLang": "en"}
        headers = {"Ocp-Apim-Subscription-Key": self._key or ""}
        return Request("GET", self.endpoint, params=params, headers=headers)

    def parse(self, data: Any, k: int) -> list[Hit]:
        results = (data.get("webPages") or {}).get("value") or []
        return [
            Hit(
                id=r["url"],
                title=clean_snippet(r.get("name")),
                url=r["url"],
                snippet=clean_snippet(r.get("snippet")),
                date=(r.get("datePublished") or "")[:10] or None,
                source=self.name,
            )
            for r in results
        ]

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "mkt": self.market}

"""Brave Search: GET ?q=&count= with X-Subscription-Token; `web.results[]` comes back."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import HTTPSearch, Request, clean_snippet
from search_o1.types import Hit

MAX_COUNT = 20  # Brave's documented maximum for `count`


class BraveSearch(HTTPSearch):
    name = "brave"
    default_endpoint = "https://api.search.brave.com/res/v1/web/search"
    key_env = "BRAVE_API_KEY"
    rate_per_s: ClassVar[float | None] = 1.0  # the free plan's limit

    def build_request(self, query: str, k: int) -> Request:
        headers = {"X-Subscription-Token": self._key or "", "Accept": "application/json"}
        params = {"q": query, "count": min(k, MAX_COUNT)}
        return Request("GET", self.endpoint, params=params, headers=headers)

    def parse(self, data: Any, k: int) -> list[Hit]:
        results = (data.get("web") or {}).get("results") or []
        return [
            Hit(
                id=r["url"],
                title=clean_snippet(r.get("title")),
                url=r["url"],
                snippet=clean_snippet(r.get("description")),
                date=r.get("page_age") or r.get("age"),
                source=self.name,
            )
            for r in results
        ]

"""Brave Search: GET ?q=&count= with X-Subscription-Token; `web.results[]` comes back."""

from __future__ import annotations

from typing import ClassVar

from search_o1.search.http import FieldMap, HTTPSearch, Request

MAX_COUNT = 20  # Brave's documented maximum for `count`


class BraveSearch(HTTPSearch):
    name = "brave"
    default_endpoint = "https://api.search.brave.com/res/v1/web/search"
    key_env = "BRAVE_API_KEY"
    rate_per_s: ClassVar[float | None] = 1.0  # the free plan's limit

    fields = FieldMap(
        ("web", "results"), title="title", snippet="description", date=("page_age", "age")
    )

    def build_request(self, query: str, k: int) -> Request:
        headers = {"X-Subscription-Token": self._key or "", "Accept": "application/json"}
        params = {"q": query, "count": min(k, MAX_COUNT)}
        return Request("GET", self.endpoint, params=params, headers=headers)

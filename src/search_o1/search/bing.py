"""Bing Web Search v7 (the paper's engine): GET ?q=&count=&mkt= with
Ocp-Apim-Subscription-Key; `webPages.value[]` comes back (absent when nothing matched)."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import FieldMap, HTTPSearch, Request

MAX_COUNT = 50  # Bing's documented maximum for `count`


class BingSearch(HTTPSearch):
    name = "bing"
    default_endpoint = "https://api.bing.microsoft.com/v7.0/search"
    key_env = "BING_API_KEY"
    rate_per_s: ClassVar[float | None] = 3.0  # the S1 tier's limit
    market = "en-US"

    fields = FieldMap(
        ("webPages", "value"),
        title="name",
        snippet="snippet",
        date=("datePublished",),
        date_chars=10,
    )

    def build_request(self, query: str, k: int) -> Request:
        # Unlike the paper's script we pass `count`, so top-k above 10 takes effect.
        params = {"q": query, "count": min(k, MAX_COUNT), "mkt": self.market, "setLang": "en"}
        headers = {"Ocp-Apim-Subscription-Key": self._key or ""}
        return Request("GET", self.endpoint, params=params, headers=headers)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "mkt": self.market}

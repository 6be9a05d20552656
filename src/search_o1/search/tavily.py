"""Tavily: POST {query, max_results, ...} with `Authorization: Bearer`; `results[]` back."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import FieldMap, HTTPSearch, Request

MAX_RESULTS = 20  # Tavily's documented maximum for `max_results`


class TavilySearch(HTTPSearch):
    name = "tavily"
    default_endpoint = "https://api.tavily.com/search"
    key_env = "TAVILY_API_KEY"
    rate_per_s: ClassVar[float | None] = 2.0
    depth = "basic"

    fields = FieldMap(
        ("results",), title="title", snippet="content", date=("published_date",), score="score"
    )

    def build_request(self, query: str, k: int) -> Request:
        body = {
            "query": query,
            "max_results": min(k, MAX_RESULTS),
            "search_depth": self.depth,
            "include_answer": False,
        }
        headers = {"Authorization": f"Bearer {self._key or ''}"}
        return Request("POST", self.endpoint, json=body, headers=headers)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "depth": self.depth}

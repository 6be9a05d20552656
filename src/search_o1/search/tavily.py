"""Tavily: POST {query, max_results, ...} with `Authorization: Bearer`; `results[]` back."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import HTTPSearch, Request, clean_snippet
from search_o1.types import Hit

MAX_RESULTS = 20  # Tavily's documented maximum for `max_results`


class TavilySearch(HTTPSearch):
    name = "tavily"
    default_endpoint = "https://api.tavily.com/search"
    key_env = "TAVILY_API_KEY"
    rate_per_s: ClassVar[float | None] = 2.0
    depth = "basic"

    def build_request(self, query: str, k: int) -> Request:
        body = {
            "query": query,
            "max_results": min(k, MAX_RESULTS),
            "search_depth": self.depth,
            "include_answer": False,
        }
        headers = {"Authorization": f"Bearer {self._key or ''}"}
        return Request("POST", self.endpoint, json=body, headers=headers)

    def parse(self, data: Any, k: int) -> list[Hit]:
        return [
            Hit(
                id=r["url"],
                title=clean_snippet(r.get("title")),
                url=r["url"],
                snippet=clean_snippet(r.get("content")),
                score=float(r["score"]) if r.get("score") is not None else None,
                date=r.get("published_date"),
                source=self.name,
            )
            for r in data.get("results") or []
        ]

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "depth": self.depth}

"""Serper (Google results): POST {q, num, gl, hl} with X-API-KEY; `organic[]` comes back."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import HTTPSearch, Request, clean_snippet
from search_o1.types import Hit


class SerperSearch(HTTPSearch):
    name = "serper"
    default_endpoint = "https://google.serper.dev/search"
    key_env = "SERPER_API_KEY"
    rate_per_s: ClassVar[float | None] = 5.0
    country, language = "us", "en"

    def build_request(self, query: str, k: int) -> Request:
        body = {"q": query, "num": k, "gl": self.country, "hl": self.language}
        return Request("POST", self.endpoint, json=body, headers={"X-API-KEY": self._key or ""})

    def parse(self, data: Any, k: int) -> list[Hit]:
        return [
            Hit(
                id=r["link"],
                title=clean_snippet(r.get("title")),
                url=r["link"],
                snippet=clean_snippet(r.get("snippet")),
                date=r.get("date"),
                source=self.name,
            )
            for r in data.get("organic") or []
        ]

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "gl": self.country, "hl": self.language}

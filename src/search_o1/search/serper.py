"""Serper (Google results): POST {q, num, gl, hl} with X-API-KEY; `organic[]` comes back."""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import FieldMap, HTTPSearch, Request


class SerperSearch(HTTPSearch):
    name = "serper"
    default_endpoint = "https://google.serper.dev/search"
    key_env = "SERPER_API_KEY"
    rate_per_s: ClassVar[float | None] = 5.0
    country, language = "us", "en"

    fields = FieldMap(("organic",), url="link", title="title", snippet="snippet", date=("date",))

    def build_request(self, query: str, k: int) -> Request:
        body = {"q": query, "num": k, "gl": self.country, "hl": self.language}
        return Request("POST", self.endpoint, json=body, headers={"X-API-KEY": self._key or ""})

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "gl": self.country, "hl": self.language}

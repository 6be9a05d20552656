"""SearXNG (self-hosted, keyless): GET {endpoint}/search?q=&format=json; `results[]` back.

The instance must enable the JSON format (`search.formats: [html, json]` in its
settings.yml); otherwise it answers 403, reported as such.
"""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import FieldMap, HTTPSearch, Request


class SearxngSearch(HTTPSearch):
    name = "searxng"
    default_endpoint = None  # self-hosted: there is no public default
    rate_per_s: ClassVar[float | None] = 2.0  # be kind to (possibly shared) instances
    language = "en"

    # SearXNG has no count parameter; one page holds ~10-20 results, cut to k later.
    fields = FieldMap(
        ("results",), title="title", snippet="content", date=("publishedDate",), score="score"
    )

    def _search_url(self) -> str:
        # Accept both the instance root and its /search path.
        base = self.endpoint.rstrip("/")
        return base if base.endswith("/search") else base + "/search"

    def build_request(self, query: str, k: int) -> Request:
        params = {"q": query, "format": "json", "language": self.language, "pageno": 1}
        return Request("GET", self._search_url(), params=params)

    def cache_identity(self) -> dict[str, Any]:
        return {**super().cache_identity(), "language": self.language}

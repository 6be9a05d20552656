"""A remote retrieval service speaking the `/retrieve` protocol of Search-R1/FlashRAG tools.

POST {"queries": [q], "topk": k, "return_scores": true} ->
{"result": [[{"document": {"id", "contents"}, "score"}]]}, where `contents` is
"Title\\ntext" (FlashRAG's Wikipedia dumps quote the title). Hits carry text, no URL,
so the document step cuts them locally instead of fetching.

A retrieval box shared by many workers is often protected (`search-o1 serve
--auth-key-env` guards its /retrieve with bearer auth): when $RETRIEVER_API_KEY is set it
is sent as `Authorization: Bearer KEY`; without it requests go unauthenticated, as the
protocol's reference servers expect.
"""

from __future__ import annotations

from typing import Any, ClassVar

from search_o1.search.http import HTTPSearch, Request
from search_o1.types import Hit


def split_contents(contents: str) -> tuple[str, str]:
    """FlashRAG `contents` -> (title, text).

    >>> split_contents('"Tosca"\\nTosca is an opera.')
    ('Tosca', 'Tosca is an opera.')
    >>> split_contents('no title line')
    ('', 'no title line')
    """
    title, sep, text = contents.partition("\n")
    if not sep:
        return "", contents.strip()
    return title.strip().strip('"').strip(), text.strip()


class RetrieverSearch(HTTPSearch):
    name = "retriever"
    default_endpoint = None  # e.g. http://gpu-box:8000/retrieve
    key_env = "RETRIEVER_API_KEY"
    key_required: ClassVar[bool] = False

    def build_request(self, query: str, k: int) -> Request:
        body = {"queries": [query], "topk": k, "return_scores": True}
        headers = {"Authorization": f"Bearer {self._key}"} if self._key else {}
        return Request("POST", self.endpoint, json=body, headers=headers)

    def parse(self, data: Any, k: int) -> list[Hit]:
        groups = data["result"]
        if not groups:
            return []
        hits = []
        for n, item in enumerate(groups[0]):
            # Servers started with return_scores false send bare documents.
            doc = item.get("document", item)
            title, text = split_contents(str(doc["contents"]))
            score = item.get("score") if doc is not item else None
            hits.append(
                Hit(
                    id=str(doc.get("id", n)),
                    title=title,
                    text=text,
                    score=float(score) if score is not None else None,
                    source=self.name,
                )
            )
        return hits

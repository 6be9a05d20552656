"""Documents from hits that carry their own text (local corpora): nothing to fetch."""

from __future__ import annotations

from collections.abc import Sequence

from search_o1.types import Document, Hit
from search_o1.window import cut_document


def local_document(hit: Hit, query: str, max_chars: int) -> Document:
    """The hit's own text cut around its best match; the snippet when it has no text."""
    if not hit.text:
        return Document(hit, hit.snippet, "snippet-only")
    return Document(hit, cut_document(hit.text, query, max_chars), "ok")


class LocalDocuments:
    """The default DocumentSource: every hit read from its own text."""

    def __init__(self, max_chars: int) -> None:
        self.max_chars = max_chars

    async def read(self, query: str, hits: Sequence[Hit]) -> list[Document]:
        return [local_document(hit, query, self.max_chars) for hit in hits]

    async def page(self, hit: Hit, max_chars: int) -> Document:
        """The start of the hit's own text (a corpus passage is its own page)."""
        if not hit.text:
            return Document(hit, hit.snippet[:max_chars], "snippet-only")
        return Document(hit, hit.text[:max_chars], "ok")

    async def aclose(self) -> None:
        return None

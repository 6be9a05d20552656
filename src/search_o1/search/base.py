"""The search protocol and the document step that turns hits into reader input."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from search_o1.text_safety import scrub_count
from search_o1.types import Document, Hit

_TEXT_FIELDS = ("id", "title", "text", "url", "snippet", "date", "source")


def scrub_hits(hits: Sequence[Hit]) -> list[Hit]:
    """Hits with lone surrogates in their text made U+FFFD, each counting its own in
    `Hit.replaced` (a backend's JSON can carry them as escapes; UTF-8 cannot)."""
    out = []
    for hit in hits:
        changes: dict[str, str] = {}
        total = 0
        for name in _TEXT_FIELDS:
            value = getattr(hit, name)
            if isinstance(value, str):
                fixed, n = scrub_count(value)
                if n:
                    changes[name] = fixed
                    total += n
        if total:
            hit = dataclasses.replace(hit, replaced=hit.replaced + total, **changes)  # type: ignore[arg-type]
        out.append(hit)
    return out


@runtime_checkable
class Search(Protocol):
    """A search backend: a query in, up to `k` hits out (best first).

    An empty list is a normal answer. Failures raise BackendError.
    """

    name: str

    async def search(self, query: str, *, k: int) -> list[Hit]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class DocumentSource(Protocol):
    """Turns hits into the documents the reader model sees (e.g. by fetching pages)."""

    async def read(self, query: str, hits: Sequence[Hit]) -> list[Document]: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class PageSource(Protocol):
    """A DocumentSource that can also give a page's text from its start (not a window):
    what the rag-agent baseline reads when it asks for a page under the paper's rules."""

    async def page(self, hit: Hit, max_chars: int) -> Document: ...

"""The search protocol and the document step that turns hits into reader input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from search_o1.types import Document, Hit


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

"""Hits -> the documents the reader model sees.

- A hit with a URL (web search): fetch the page (through the shared cache), then take
  the window around the sentence that best matches the hit's snippet (the paper's rule;
  `window.best_window`). A failed fetch keeps the snippet with status "failed: <reason>";
  with fetching off, the snippet with status "snippet-only".
- A hit without a URL (local corpus, retriever): its own text, cut around the part that
  best matches the query (`window.cut_document`), status "ok".

Pages are cached (in the Cache the caller gives) as extracted full text keyed by (url,
extractor version, and the page service when one is used: it extracts
differently), so the window can differ per snippet while the download happens once.
Failures are never cached. In replay mode a page the recording never fetched (for
example, because its fetch failed then) comes back as "failed: cache replay: ..."
naming the URL: the reader sees the snippet, as it did in the recording, and the trace
says why.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence

from search_o1.cache import Cache
from search_o1.documents import local_document
from search_o1.errors import FetchError, ReplayMissError
from search_o1.fetch.fetcher import PageFetcher
from search_o1.page_text import EXTRACTOR_VERSION
from search_o1.types import Document, Hit
from search_o1.window import best_window

__all__ = ["WebDocuments"]

# The paper's window helper splits at most 50,000 characters of a page into sentences
# (its Search-o1 script had already cut the page to its first 8,000: `max_page_chars`
# under the paper profile); more text only costs time.
MAX_WINDOW_SOURCE = 50_000
# What a cached page keeps (enough for any window, bounded for the store's size).
MAX_STORED_CHARS = 200_000


class WebDocuments:
    """The DocumentSource for every backend: fetches web hits, cuts corpus hits.

    `cache` is a zero-argument callable returning the run's Cache (or None), called at
    the first page so corpus-only runs never open a cache file.
    """

    def __init__(
        self,
        fetcher: PageFetcher | None,
        *,
        max_doc_chars: int = 3000,
        max_page_chars: int = MAX_WINDOW_SOURCE,
        cache: Callable[[], Cache | None] = lambda: None,
    ) -> None:
        self.fetcher = fetcher
        self.max_doc_chars = max_doc_chars
        self.max_page_chars = max_page_chars
        self._cache_factory = cache
        self._inflight: dict[str, asyncio.Task[str]] = {}

    async def read(self, query: str, hits: Sequence[Hit]) -> list[Document]:
        return list(await asyncio.gather(*(self._document(query, h) for h in hits)))

    async def _document(self, query: str, hit: Hit) -> Document:
        if hit.url is None:
            return local_document(hit, query, self.max_doc_chars)
        if self.fetcher is None:
            return Document(hit, hit.snippet, "snippet-only")
        text = await self._text_or_failure(hit, hit.url)
        if isinstance(text, Document):
            return text
        window, _matched = best_window(
            text[: self.max_page_chars], hit.snippet or query, self.max_doc_chars
        )
        return Document(hit, window, "ok")

    async def page(self, hit: Hit, max_chars: int) -> Document:
        """The first `max_chars` of a page's text (rag-agent's full page, the paper's way)."""
        if hit.url is None or self.fetcher is None:
            return Document(hit, (hit.text or hit.snippet)[:max_chars], "snippet-only")
        text = await self._text_or_failure(hit, hit.url)
        if isinstance(text, Document):
            return text
        return Document(hit, text[:max_chars], "ok")

    async def _text_or_failure(self, hit: Hit, url: str) -> str | Document:
        """The page's text, or the hit's snippet as a document recording why it failed."""
        try:
            return await self._page_text(url)
        except FetchError as e:
            return Document(hit, hit.snippet, f"failed: {e.reason}")
        except ReplayMissError as e:
            return Document(hit, hit.snippet, f"failed: {e}")

    async def _page_text(self, url: str) -> str:
        # One download per URL at a time, however many questions ask for it at once.
        task = self._inflight.get(url)
        if task is None:
            task = asyncio.ensure_future(self._load(url))
            self._inflight[url] = task
            task.add_done_callback(lambda _t: self._inflight.pop(url, None))
        # shield: one cancelled waiter must not cancel the download for the others.
        return await asyncio.shield(task)

    async def _load(self, url: str) -> str:
        cache = self._cache_factory()
        assert self.fetcher is not None
        meta = {"url": url, "extractor": EXTRACTOR_VERSION, **self.fetcher.cache_identity()}
        if cache is not None:
            stored = cache.get("page", meta, url)  # replay: raises on a miss
            if stored is not None:
                return str(stored["text"])
        page = await self.fetcher.fetch(url)  # FetchError propagates; nothing is stored
        text = page.text[:MAX_STORED_CHARS]
        if cache is not None:
            value = {"text": text, "final_url": page.url, "content_type": page.content_type}
            cache.put("page", meta, url, value)
        return text

    async def aclose(self) -> None:
        if self.fetcher is not None:
            await self.fetcher.aclose()

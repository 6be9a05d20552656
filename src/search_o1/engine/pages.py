"""rag-agent's page requests: the model names, between the URL markers, pages it saw in
earlier raw results (several separated by commas); each is read within the chain's
page limit, and refused with a reason if it was never shown or the limit is reached.

Under the paper profile the request follows its script's rules: a page read before is
left out (a request of nothing new inserts nothing), the rest are cut to the pages
left, every one of them counts, all go into one block as a JSON object (URL -> text),
and the limit notice follows at once when the request reaches the limit.
"""

from __future__ import annotations

import dataclasses
import json

from search_o1 import markers as mk
from search_o1.engine.options import EngineOptions
from search_o1.engine.state import ChainState
from search_o1.search.base import DocumentSource, PageSource
from search_o1.types import Document, Hit, SearchRecord

_WHY = {
    "page_limit": "the page-reading limit has been reached",
    "unshown_page": "that URL was not in any search result",
}


async def read_pages(
    state: ChainState, request: str, documents: DocumentSource, options: EngineOptions
) -> SearchRecord:
    """The record (and inserted page blocks) for one `<|begin_url|>...<|end_url|>` request."""
    if options.paper_inserts:
        return await _paper_pages(state, request, documents, options)
    urls = [u.strip() for u in request.split(",") if u.strip()] or [request]
    blocks: list[str] = []
    read: list[Document] = []
    errors: list[str] = []
    for url in urls:
        hit = state.seen_hits.get(url)
        if hit is None or state.url_fetches >= options.limits.max_url_fetches:
            kind = "unshown_page" if hit is None else "page_limit"
            blocks.append(mk.page_block(mk.neutralise(_notice(state, options, kind, url))))
            errors.append(f"{url}: {_WHY[kind]}")
            continue
        state.url_fetches += 1
        doc = await _page(state, hit, url, documents, options)
        blocks.append(mk.page_block(mk.neutralise(doc.text)))
        read.append(doc)
    return _record(request, read, errors, "".join(blocks))


async def _paper_pages(
    state: ChainState, request: str, documents: DocumentSource, options: EngineOptions
) -> SearchRecord:
    limit = options.limits.max_url_fetches
    notice = _notice(state, options, "page_limit", request)
    if state.url_fetches >= limit:
        return SearchRecord(
            request, "limit", inserted=mk.paper_page_block(notice), error=_WHY["page_limit"]
        )
    asked = dict.fromkeys(u.strip() for u in request.split(",") if u.strip())
    urls = [u for u in asked if u not in state.read_urls][: limit - state.url_fetches]
    if not urls:
        return SearchRecord(request, "repeated")
    pages: dict[str, str] = {}
    read: list[Document] = []
    errors: list[str] = []
    for url in urls:
        state.read_urls.add(url)
        state.url_fetches += 1
        hit = state.seen_hits.get(url)
        if hit is None:
            pages[url] = _notice(state, options, "unshown_page", url)
            errors.append(f"{url}: {_WHY['unshown_page']}")
            continue
        doc = await _page(state, hit, url, documents, options)
        pages[url] = doc.text
        read.append(doc)
    safe = {url: mk.neutralise(text) for url, text in pages.items()}
    inserted = mk.paper_page_block(json.dumps(safe, ensure_ascii=False, indent=2))
    if state.url_fetches >= limit:
        inserted += mk.paper_page_block(notice)
    return _record(request, read, errors, inserted)


def _notice(state: ChainState, options: EngineOptions, kind: str, url: str) -> str:
    max_urls = options.limits.max_url_fetches
    return options.prompts.notice(kind, state.task, url=url, max_urls=max_urls)


def _record(request: str, read: list[Document], errors: list[str], inserted: str) -> SearchRecord:
    return SearchRecord(
        request,
        "failed" if not read else "searched",
        hits=tuple(d.hit for d in read),
        documents=tuple(read),
        inserted=inserted,
        error="; ".join(errors) or None,
    )


async def _page(
    state: ChainState, hit: Hit, url: str, documents: DocumentSource, options: EngineOptions
) -> Document:
    """The document read for one requested URL (its first `page_chars` characters)."""
    page_chars = options.search.page_chars
    async with state.phase("search"):
        if page_chars is not None and isinstance(documents, PageSource):
            doc = await documents.page(hit, page_chars)
        else:
            docs = await documents.read(url, [hit])
            doc = docs[0] if docs else Document(hit, "", "empty")
    if page_chars is not None:
        doc = dataclasses.replace(doc, text=doc.text[:page_chars])
    return doc

"""rag-agent's page requests: the model names, between the URL markers, pages it saw in
earlier raw results (several separated by commas); each is read within the chain's
page limit, and refused with a reason if it was never shown or the limit is reached.
"""

from __future__ import annotations

import dataclasses

from search_o1 import markers as mk
from search_o1.engine.options import EngineOptions
from search_o1.engine.state import ChainState
from search_o1.search.base import DocumentSource, PageSource
from search_o1.types import Document, SearchRecord


async def read_pages(
    state: ChainState, request: str, documents: DocumentSource, options: EngineOptions
) -> SearchRecord:
    """The record (and inserted page blocks) for one `<|begin_url|>...<|end_url|>` request."""
    urls = [u.strip() for u in request.split(",") if u.strip()] or [request]
    blocks: list[str] = []
    read: list[Document] = []
    errors: list[str] = []
    for url in urls:
        text, doc, error = await _page(state, url, documents, options)
        blocks.append(mk.page_block(mk.neutralise(text)))
        read += [doc] if doc is not None else []
        errors += [f"{url}: {error}"] if error else []
    return SearchRecord(
        request,
        "failed" if not read else "searched",
        hits=tuple(d.hit for d in read),
        documents=tuple(read),
        inserted="".join(blocks),
        error="; ".join(errors) or None,
    )


async def _page(
    state: ChainState, url: str, documents: DocumentSource, options: EngineOptions
) -> tuple[str, Document | None, str | None]:
    """(text to insert, the document read, why not) for one requested URL."""
    hit = state.seen_hits.get(url)
    if hit is None or state.url_fetches >= options.limits.max_url_fetches:
        why = (
            "that URL was not in any search result"
            if hit is None
            else "the page-reading limit has been reached"
        )
        return f"Cannot read the page: {why}.", None, why
    state.url_fetches += 1
    page_chars = options.search.page_chars
    async with state.phase("search"):
        if page_chars is not None and isinstance(documents, PageSource):
            doc = await documents.page(hit, page_chars)
        else:
            docs = await documents.read(url, [hit])
            doc = docs[0] if docs else Document(hit, "", "empty")
    if page_chars is not None:
        doc = dataclasses.replace(doc, text=doc.text[:page_chars])
    return doc.text, doc, None
